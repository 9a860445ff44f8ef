//! The filesystem watcher behind hot reload.
//!
//! It watches every root recursively with `notify`, and coalesces events
//! with a trailing debounce: a batch is delivered once no event arrived for
//! the debounce window (500 ms by default), or at the latest four windows
//! after the first event of the batch, so a burst of edits becomes one batch
//! while an endless stream of edits still gets through.
//!
//! A root that does not exist yet is covered by a non-recursive watch on its
//! nearest existing ancestor; when the root appears (or disappears, or is
//! replaced) the watches are re-armed before the batch is delivered. Events
//! from those ancestor watches count only when they lie on the way to a root,
//! so a busy home directory does not cause rescans.
//!
//! The watcher only says *that* something changed, and where; rescanning and
//! deciding what actually changed is the caller's job.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// The debounce window of the RFC.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(500);

/// The watcher could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// The platform watcher failed (shown in the message with its causes,
    /// so not a `source()`).
    #[error("filesystem watcher: {}", extpool_core::Causes(.0))]
    Notify(notify::Error),
    /// The watcher thread could not be spawned (the error is shown in the
    /// message, so not a `source()`).
    #[error("cannot spawn the watcher thread: {0}")]
    Thread(std::io::Error),
}

impl From<notify::Error> for WatchError {
    fn from(error: notify::Error) -> Self {
        Self::Notify(error)
    }
}

/// One coalesced batch of filesystem changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchBatch {
    /// Paths the events named (deduplicated); empty after an overflow, when
    /// everything must be rescanned.
    pub paths: Vec<PathBuf>,
    /// A root appeared, disappeared or was replaced since the last batch.
    pub roots_changed: bool,
}

enum Msg {
    Fs(notify::Result<notify::Event>),
    Stop,
}

/// A running watcher; dropping it stops it.
#[derive(Debug)]
pub struct SkillWatcher {
    tx: mpsc::Sender<Msg>,
    thread: Option<JoinHandle<()>>,
}

type Identity = Option<(u64, u64)>;

#[cfg(unix)]
fn identity(path: &Path) -> Identity {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> Identity {
    std::fs::metadata(path).ok().map(|_| (0, 0))
}

struct Armer {
    watcher: RecommendedWatcher,
    roots: Vec<PathBuf>,
    armed: HashMap<PathBuf, (RecursiveMode, Identity)>,
}

impl Armer {
    fn desired(&self) -> HashMap<PathBuf, (RecursiveMode, Identity)> {
        let mut want: HashMap<PathBuf, (RecursiveMode, Identity)> = HashMap::new();
        for root in &self.roots {
            if root.is_dir() {
                want.insert(root.clone(), (RecursiveMode::Recursive, identity(root)));
                continue;
            }
            if let Some(anc) = root.ancestors().skip(1).find(|a| a.is_dir()) {
                want.entry(anc.to_owned())
                    .or_insert((RecursiveMode::NonRecursive, identity(anc)));
            }
        }
        want
    }

    /// Brings the watches in line with the filesystem; true when a root's
    /// recursive watch was added, removed or replaced.
    fn rearm(&mut self) -> bool {
        let want = self.desired();
        let mut roots_changed = false;
        let stale: Vec<PathBuf> = self
            .armed
            .iter()
            .filter(|(p, state)| want.get(*p) != Some(*state))
            .map(|(p, _)| p.clone())
            .collect();
        for path in stale {
            if let Some((mode, _)) = self.armed.remove(&path) {
                roots_changed |= mode == RecursiveMode::Recursive;
                // The watch may be gone already (the directory was deleted).
                let _ = self.watcher.unwatch(&path);
            }
        }
        for (path, state) in want {
            if self.armed.contains_key(&path) {
                continue;
            }
            match self.watcher.watch(&path, state.0) {
                Ok(()) => {
                    roots_changed |= state.0 == RecursiveMode::Recursive;
                    tracing::debug!(path = %path.display(), mode = ?state.0, "watching");
                    self.armed.insert(path, state);
                }
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot watch"),
            }
        }
        roots_changed
    }

    /// Whether an event path matters: inside a root, or on the way to one.
    fn relevant(&self, path: &Path) -> bool {
        self.roots
            .iter()
            .any(|r| path.starts_with(r) || r.starts_with(path))
    }
}

fn relevant_kind(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

impl SkillWatcher {
    /// Starts watching `roots`; `on_change` runs on the watcher's thread
    /// once per coalesced batch.
    pub fn spawn<F>(
        roots: Vec<PathBuf>,
        debounce: Duration,
        mut on_change: F,
    ) -> Result<Self, WatchError>
    where
        F: FnMut(WatchBatch) + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let fs_tx = tx.clone();
        let watcher = notify::recommended_watcher(move |res| {
            let _ = fs_tx.send(Msg::Fs(res));
        })?;
        let mut armer = Armer {
            watcher,
            roots,
            armed: HashMap::new(),
        };
        armer.rearm();
        let max_latency = debounce * 4;
        let thread = std::thread::Builder::new()
            .name("extpool-skills-watch".into())
            .spawn(move || {
                let mut pending: Vec<PathBuf> = Vec::new();
                let mut first: Option<Instant> = None;
                let mut last = Instant::now();
                loop {
                    let msg = match first {
                        None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                        Some(first_at) => {
                            let deadline = (last + debounce).min(first_at + max_latency);
                            let now = Instant::now();
                            if now >= deadline {
                                Err(mpsc::RecvTimeoutError::Timeout)
                            } else {
                                rx.recv_timeout(deadline - now)
                            }
                        }
                    };
                    match msg {
                        Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        Ok(Msg::Fs(Ok(event))) => {
                            let rescan = event.need_rescan();
                            if !rescan && !relevant_kind(&event.kind) {
                                continue;
                            }
                            let paths: Vec<PathBuf> = event
                                .paths
                                .into_iter()
                                .filter(|p| armer.relevant(p))
                                .collect();
                            if paths.is_empty() && !rescan {
                                continue;
                            }
                            pending.extend(paths);
                            first.get_or_insert_with(Instant::now);
                            last = Instant::now();
                        }
                        Ok(Msg::Fs(Err(e))) => {
                            tracing::warn!(error = %e, "filesystem watcher error; rescanning");
                            first.get_or_insert_with(Instant::now);
                            last = Instant::now();
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            let roots_changed = armer.rearm();
                            pending.sort();
                            pending.dedup();
                            on_change(WatchBatch {
                                paths: std::mem::take(&mut pending),
                                roots_changed,
                            });
                            first = None;
                        }
                    }
                }
            })
            .map_err(WatchError::Thread)?;
        Ok(Self {
            tx,
            thread: Some(thread),
        })
    }

    /// Stops watching and waits for the thread to finish.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(thread) = self.thread.take() {
            // Dropped from its own callback: the loop ends after the callback.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for SkillWatcher {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_events_do_not_count() {
        assert!(!relevant_kind(&EventKind::Access(AccessKind::Open(
            AccessMode::Read
        ))));
        assert!(relevant_kind(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(relevant_kind(&EventKind::Any));
    }
}
