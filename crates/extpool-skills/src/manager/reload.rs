//! Hot reload: rescanning, publishing a new snapshot, and the change events.
//!
//! Each watcher batch triggers one full rediscovery (metadata only; cheap)
//! and a comparison with the published snapshot. Only a real difference is
//! published and announced, so a burst of edits that the debounce folded
//! into one batch yields one event per kind, and a batch that changed
//! nothing (an editor's swap file, our own reads) yields none.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use extpool_core::{ChangeEvent, ChangeKind, ChangeStream};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use super::children::{Embedded, build_embedded};
use super::{Inner, State};
use crate::discover::{Discovery, discover, rediscover};
use crate::watch::{SkillWatcher, WatchBatch};

/// What a reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReloadSummary {
    /// Skills that appeared.
    pub added: Vec<String>,
    /// Skills that disappeared.
    pub removed: Vec<String>,
    /// Skills whose SKILL.md (or location) changed.
    pub changed: Vec<String>,
    /// Skills whose supporting files changed.
    pub files_changed: Vec<String>,
}

impl ReloadSummary {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.files_changed.is_empty()
    }
}

/// Tasks that forward the children's change streams, and the runtime to
/// spawn them on (remembered at `start()`, since reloads run on the
/// watcher's thread).
#[derive(Default)]
pub(crate) struct Forwarders {
    handle: Mutex<Option<Handle>>,
    tasks: Mutex<HashMap<String, JoinHandle<()>>>,
}

impl Forwarders {
    fn handle(&self) -> Option<Handle> {
        self.handle.lock().clone()
    }

    fn remember_runtime(&self) -> Option<Handle> {
        let mut h = self.handle.lock();
        if h.is_none() {
            *h = Handle::try_current().ok();
        }
        h.clone()
    }

    fn abort(&self, id: &str) {
        if let Some(task) = self.tasks.lock().remove(id) {
            task.abort();
        }
    }

    /// Stops every forwarding task.
    pub fn abort_all(&self) {
        for (_, task) in self.tasks.lock().drain() {
            task.abort();
        }
    }
}

/// Publishes `discovery` as the new snapshot, building embedded servers
/// (reusing `previous` ones that did not change). Returns the children that
/// are gone.
pub(crate) fn publish(inner: &Inner, discovery: Discovery, previous: &[Embedded]) -> Vec<Embedded> {
    let taken: Vec<String> = inner.children.iter().map(|c| c.id().to_owned()).collect();
    let (embedded, embedded_diagnostics) = build_embedded(
        inner.factory.as_deref(),
        &inner.chain,
        inner.max_depth,
        &taken,
        &discovery.skills,
        previous,
    );
    let by_name = discovery
        .skills
        .iter()
        .map(|s| (s.meta.name.clone(), s.clone()))
        .collect();
    let gone = previous
        .iter()
        .filter(|p| !embedded.iter().any(|e| Arc::ptr_eq(&e.cap, &p.cap)))
        .cloned()
        .collect();
    inner.state.store(Arc::new(State {
        discovery,
        by_name,
        embedded,
        embedded_diagnostics,
    }));
    inner.routes.write().clear();
    gone
}

fn diff(old: &State, new: &Discovery, paths: &[PathBuf]) -> ReloadSummary {
    let mut summary = ReloadSummary::default();
    let new_names: HashSet<&str> = new.skills.iter().map(|s| s.name()).collect();
    // Every directory a changed path lies in: a skill is touched when its
    // directory is one of them (what `Skill::contains` tells, in one lookup).
    let around: HashSet<&Path> = paths.iter().flat_map(|p| p.ancestors()).collect();
    for skill in &new.skills {
        match old.skill(skill.name()) {
            None => summary.added.push(skill.meta.name.clone()),
            Some(prev) if !Arc::ptr_eq(prev, skill) && **prev != **skill => {
                summary.changed.push(skill.meta.name.clone());
            }
            Some(_) => {
                let inside = around.contains(skill.dir.as_path())
                    || (skill.canonical_dir != skill.dir
                        && around.contains(skill.canonical_dir.as_path()));
                let touched = inside
                    && paths
                        .iter()
                        .any(|p| skill.contains(p) && p != &skill.skill_md && p != &skill.dir);
                if touched {
                    summary.files_changed.push(skill.meta.name.clone());
                }
            }
        }
    }
    for skill in &old.discovery.skills {
        if !new_names.contains(skill.name()) {
            summary.removed.push(skill.meta.name.clone());
        }
    }
    summary
}

/// Rescans, publishes when something changed, and announces it. With
/// `changed_at` (the paths of a watcher batch) only what changed there is
/// read again when that is enough to know the result; otherwise, and for a
/// manual reload, every root is walked.
pub(crate) fn reload(inner: &Arc<Inner>, paths: &[PathBuf], changed_at: bool) -> ReloadSummary {
    let _serial = inner.reload_lock.lock();
    let old = inner.state.load_full();
    let new = if changed_at {
        rediscover(&inner.config, &old.discovery, paths)
    } else {
        discover(&inner.config)
    };
    let summary = diff(&old, &new, paths);
    let skills_changed =
        !(summary.added.is_empty() && summary.removed.is_empty() && summary.changed.is_empty());
    if !skills_changed && new.diagnostics == old.discovery.diagnostics {
        if !summary.files_changed.is_empty() {
            inner.emit(
                ChangeKind::ResourcesChanged,
                source_of(&summary.files_changed),
            );
        }
        return summary;
    }
    let commands_affected = summary
        .added
        .iter()
        .chain(&summary.changed)
        .filter_map(|n| new.get(n))
        .chain(
            summary
                .removed
                .iter()
                .chain(&summary.changed)
                .filter_map(|n| old.skill(n)),
        )
        .any(|s| s.meta.user_invocable);
    let gone = publish(inner, new, &old.embedded);
    let embedded_changed =
        !gone.is_empty() || inner.state.load().embedded.len() != old.embedded.len();
    for child in gone {
        retire(inner, child);
    }
    forward_children(inner);
    tracing::info!(
        capability = %inner.id,
        added = ?summary.added,
        removed = ?summary.removed,
        changed = ?summary.changed,
        "skills reloaded"
    );
    if skills_changed {
        let affected: Vec<String> = summary
            .added
            .iter()
            .chain(&summary.removed)
            .chain(&summary.changed)
            .cloned()
            .collect();
        let source = source_of(&affected);
        inner.emit(ChangeKind::SkillsChanged, source.clone());
        inner.emit(ChangeKind::ResourcesChanged, source.clone());
        if commands_affected {
            inner.emit(ChangeKind::CommandsChanged, source);
        }
    } else if !summary.files_changed.is_empty() {
        inner.emit(
            ChangeKind::ResourcesChanged,
            source_of(&summary.files_changed),
        );
    }
    if embedded_changed {
        inner.emit(ChangeKind::ToolsChanged, "");
    }
    summary
}

/// `skill://<name>` when one skill is concerned, else empty (many).
fn source_of(names: &[String]) -> String {
    match names {
        [one] => format!("skill://{one}"),
        _ => String::new(),
    }
}

/// Shuts down a child that a reload removed.
fn retire(inner: &Inner, child: Embedded) {
    let id = child.cap.id().to_owned();
    inner.forwarders.abort(&id);
    inner.failures.lock().remove(&id);
    tracing::info!(skill = %child.skill, server = %child.server, "embedded MCP server removed");
    if let Some(handle) = inner.forwarders.handle() {
        handle.spawn(async move {
            if let Err(e) = child.cap.shutdown().await {
                tracing::warn!(child = %id, error = %e, "embedded server shutdown failed");
            }
        });
    }
}

/// Starts the filesystem watcher (idempotent).
pub(crate) fn start_watcher(inner: &Arc<Inner>) {
    let mut slot = inner.watcher.lock();
    if slot.is_some() {
        return;
    }
    inner.forwarders.remember_runtime();
    let roots: Vec<PathBuf> = inner.config.roots().into_iter().map(|r| r.path).collect();
    let weak: Weak<Inner> = Arc::downgrade(inner);
    let spawned = SkillWatcher::spawn(roots, inner.debounce, move |batch| {
        if let Some(inner) = weak.upgrade() {
            on_batch(&inner, &batch);
        }
    });
    match spawned {
        Ok(w) => *slot = Some(w),
        Err(e) => {
            tracing::warn!(capability = %inner.id, error = %e, "skills hot reload unavailable");
        }
    }
}

/// Applies one watcher batch. A batch that changed nothing (files beside
/// the skills, such as a log being written there) logs nothing: its line
/// would be the next batch's change.
fn on_batch(inner: &Arc<Inner>, batch: &WatchBatch) -> ReloadSummary {
    // A root that appeared, went or was replaced: walk everything.
    let summary = reload(inner, &batch.paths, !batch.roots_changed);
    if !summary.is_empty() || batch.roots_changed {
        tracing::debug!(?summary, roots_changed = batch.roots_changed, "watch batch");
    }
    summary
}

/// Forwards the change streams of children not forwarded yet, relabelled
/// as this manager's events (the children are not registered themselves).
pub(crate) fn forward_children(inner: &Arc<Inner>) {
    let Some(handle) = inner.forwarders.remember_runtime() else {
        return;
    };
    for child in inner.all_children() {
        let id = child.id().to_owned();
        if inner.forwarders.tasks.lock().contains_key(&id) {
            continue;
        }
        let Some(mut stream) = child.observable().and_then(|o| o.on_change()) else {
            continue;
        };
        let weak = Arc::downgrade(inner);
        let child_id = id.clone();
        let task = handle.spawn(async move {
            while let Some(item) = stream.next().await {
                let Some(inner) = weak.upgrade() else { break };
                match item {
                    Ok(event) => {
                        // A child that reports a change is alive again.
                        inner.record_ok(&child_id);
                        let source = if event.source_uri.is_empty() {
                            format!("mcp://{child_id}")
                        } else {
                            event.source_uri
                        };
                        inner.emit(event.kind, source);
                    }
                    Err(e) => {
                        tracing::warn!(child = %child_id, error = %e, "child change stream ended");
                        break;
                    }
                }
            }
        });
        inner.forwarders.tasks.lock().insert(id, task);
    }
}

/// A fresh subscription to this manager's changes. A subscriber that falls
/// behind gets one `skills_changed` in place of what it missed.
pub(crate) fn subscribe(inner: &Inner) -> ChangeStream {
    let id = inner.id.clone();
    BroadcastStream::new(inner.events.subscribe())
        .map(move |item| match item {
            Ok(event) => Ok(event),
            Err(BroadcastStreamRecvError::Lagged(n)) => {
                tracing::warn!(capability = %id, missed = n, "change subscriber lagged");
                Ok(ChangeEvent::new(&id, ChangeKind::SkillsChanged, ""))
            }
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the events logged while it is the default subscriber.
    struct Counted(Arc<std::sync::atomic::AtomicUsize>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Counted {
        fn on_event(
            &self,
            _event: &tracing::Event<'_>,
            _ctx: tracing_subscriber::layer::Context<'_, S>,
        ) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Events logged at any level while `work` runs on this thread.
    fn logged(work: impl FnOnce()) -> usize {
        use tracing_subscriber::layer::SubscriberExt;
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry().with(Counted(count.clone()));
        tracing::subscriber::with_default(subscriber, work);
        count.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[test]
    fn a_batch_of_files_beside_the_skills_logs_nothing() {
        let root = tempfile::tempdir().unwrap();
        let skill = root.path().join("demo");
        std::fs::create_dir_all(&skill).unwrap();
        let skill_md = skill.join("SKILL.md");
        std::fs::write(&skill_md, "---\nname: demo\ndescription: D\n---\nBody.\n").unwrap();
        let cap = crate::SkillManagerCap::builder("skills")
            .discovery(crate::DiscoveryConfig::with_paths([root.path().to_owned()]))
            .watch(false)
            .build()
            .unwrap();
        // A log written in the root, beside the skill.
        let log = root.path().join("extpool.log");
        std::fs::write(&log, "a line\n").unwrap();
        let batch = WatchBatch {
            paths: vec![log],
            roots_changed: false,
        };
        let mut summary = ReloadSummary::default();
        let lines = logged(|| summary = on_batch(&cap.inner, &batch));
        assert!(summary.is_empty(), "{summary:?}");
        assert_eq!(lines, 0, "a line per such batch feeds a log kept there");
        // A batch that changes a skill is logged.
        std::fs::write(&skill_md, "---\nname: demo\ndescription: E\n---\nBody.\n").unwrap();
        let batch = WatchBatch {
            paths: vec![skill_md],
            roots_changed: false,
        };
        let lines = logged(|| summary = on_batch(&cap.inner, &batch));
        assert_eq!(summary.changed, ["demo"]);
        assert!(lines > 0);
    }

    #[test]
    fn source_names_one_skill_or_none() {
        assert_eq!(source_of(&["a".into()]), "skill://a");
        assert_eq!(source_of(&["a".into(), "b".into()]), "");
    }
}
