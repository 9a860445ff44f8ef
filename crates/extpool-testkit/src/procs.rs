//! Processes seen from a test: which live processes carry a marker in
//! their command line (a server's `--state-dir`), waiting until they are
//! gone, killing one the way a crash would, and a link to the server binary
//! that a test can break and restore to make the server impossible to start
//! again and possible again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::stdio_command;

/// How long a wait for a process or a thread to end lasts before it
/// fails the test (reached only when broken).
pub const GONE_PATIENCE: Duration = Duration::from_secs(60);

/// Pids of live (not zombie) processes whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let alive = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        if alive && String::from_utf8_lossy(&cmdline).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

/// Waits until no live process carries `marker`, on the kernel's word for
/// each of them ([`exited`]); looks again after each, for one that started
/// meanwhile.
///
/// # Panics
///
/// After [`GONE_PATIENCE`] for one of them.
pub async fn wait_until_gone(marker: &str) {
    loop {
        let pids = pids_with(marker);
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            exited(pid).await;
        }
    }
}

/// `PIDFD_THREAD` (Linux 6.9): a pidfd for one thread, readable when that
/// thread ends (rustix names no constant for it; it is `O_EXCL`).
const PIDFD_THREAD: u32 = 0o200;

/// What a pidfd is waited for.
#[derive(Clone, Copy)]
enum Until {
    /// The process (or thread) ended: readable.
    Ended,
    /// The process was reaped by its parent: hung up (Linux 6.15).
    Reaped,
}

/// Waits on a pidfd of `id` (a thread with `thread`) until `until`;
/// `true` when it happened within [`GONE_PATIENCE`] or `id` names no
/// process any more. Blocks the calling thread.
fn pidfd_poll(id: u32, thread: bool, until: Until) -> bool {
    let flags = if thread {
        rustix::process::PidfdFlags::from_bits_retain(PIDFD_THREAD)
    } else {
        rustix::process::PidfdFlags::empty()
    };
    let fd = i32::try_from(id)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .map(|pid| rustix::process::pidfd_open(pid, flags));
    let fd = match fd {
        Some(Ok(fd)) => fd,
        // No such process (ESRCH): gone already.
        Some(Err(rustix::io::Errno::SRCH)) | None => return true,
        Some(Err(e)) => panic!("cannot open a pidfd for {id}: {e}"),
    };
    let events = match until {
        Until::Ended => rustix::event::PollFlags::IN,
        // Only the hang-up, which poll reports unasked.
        Until::Reaped => rustix::event::PollFlags::empty(),
    };
    let timeout = rustix::event::Timespec::try_from(GONE_PATIENCE)
        .unwrap_or_else(|e| panic!("patience out of range: {e}"));
    let mut fds = [rustix::event::PollFd::new(&fd, events)];
    loop {
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Err(rustix::io::Errno::INTR) => {}
            Ok(n) => return n > 0,
            Err(e) => panic!("cannot wait on {id}: {e}"),
        }
    }
}

/// [`pidfd_poll`] on a blocking thread.
async fn pidfd_wait(id: u32, thread: bool, until: Until) -> bool {
    tokio::task::spawn_blocking(move || pidfd_poll(id, thread, until))
        .await
        .unwrap_or_else(|e| panic!("waiting on {id}: {e}"))
}

/// [`exited`] for a test without a runtime: blocks until process `pid` has
/// exited (a zombie counts).
///
/// # Panics
///
/// After [`GONE_PATIENCE`].
pub fn wait_exited(pid: u32) {
    assert!(
        pidfd_poll(pid, false, Until::Ended),
        "process {pid} still running after {GONE_PATIENCE:?}"
    );
}

/// Waits until process `pid` has exited (a zombie counts: its parent may
/// not have reaped it yet), on the kernel's word (a pidfd becomes readable
/// when the process ends) — no polling. A pid that names no process has
/// exited already.
///
/// # Panics
///
/// After [`GONE_PATIENCE`].
pub async fn exited(pid: u32) {
    assert!(
        pidfd_wait(pid, false, Until::Ended).await,
        "process {pid} still running after {GONE_PATIENCE:?}"
    );
}

/// Waits until process `pid` has exited and been reaped by its parent (no
/// zombie left), on the kernel's word (its pidfd hangs up when it is
/// reaped, since Linux 6.15) — no polling.
///
/// # Panics
///
/// After [`GONE_PATIENCE`], when it is still there.
pub async fn reaped(pid: u32) {
    if !pidfd_wait(pid, false, Until::Reaped).await {
        // A kernel without the hang-up: what /proc says after the wait.
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} not reaped after {GONE_PATIENCE:?}"
        );
    }
}

/// The ids of this process's live threads named `name` (their `comm`).
/// A thread that has ended is not among them, though the kernel lists it
/// until it is released: its pidfd says it ended ([`thread_ended`]) a
/// moment before its `/proc` entry goes.
pub fn threads_named(name: &str) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
                name_and_state(&stat).is_some_and(|(comm, _)| comm == name) && alive(&stat)
            })
        })
        .filter_map(|task| task.file_name().to_str()?.parse().ok())
        .collect()
}

/// The name (`comm`) and the state of a task whose `/proc/<id>/stat`
/// reads `stat`: the name is what the parentheses hold (it may itself
/// hold `)`), the state the field after them.
fn name_and_state(stat: &str) -> Option<(&str, &str)> {
    let close = stat.rfind(')')?;
    let name = stat.get(stat.find('(')? + 1..close)?;
    let state = stat[close + 1..].split_whitespace().next()?;
    Some((name, state))
}

/// Whether a task whose `/proc/<id>/stat` reads `stat` is running or
/// could run: not a zombie (`Z`) and not dead (`X`).
fn alive(stat: &str) -> bool {
    name_and_state(stat).is_some_and(|(_, state)| !matches!(state, "Z" | "X"))
}

/// Waits until thread `tid` of this process has ended, on the kernel's
/// word (a thread pidfd, Linux 6.9) — no polling.
///
/// # Panics
///
/// After [`GONE_PATIENCE`].
pub async fn thread_ended(tid: u32) {
    assert!(
        pidfd_wait(tid, true, Until::Ended).await,
        "thread {tid} still running after {GONE_PATIENCE:?}"
    );
}

/// Kills (SIGKILL, like a crash) the one live process carrying `marker`,
/// waits until that process is gone, and returns its pid.
///
/// # Panics
///
/// When not exactly one process carries `marker`, or `kill` fails.
pub async fn kill_one(marker: &str) -> u32 {
    let pids = pids_with(marker);
    assert_eq!(pids.len(), 1, "one process for {marker}: {pids:?}");
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pids[0].to_string()])
        .status()
        .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
    assert!(status.success(), "kill -KILL {} failed", pids[0]);
    // That process, not every one carrying the marker: the host may have
    // started the server again by the time it is gone.
    exited(pids[0]).await;
    pids[0]
}

/// A symbolic link to the test server binary. Configure a server with
/// [`ServerLink::command`]; [`ServerLink::break_it`] makes it impossible
/// to start again (a reconnect fails), [`ServerLink::restore`] possible.
#[derive(Debug)]
pub struct ServerLink {
    path: PathBuf,
    target: PathBuf,
}

impl ServerLink {
    /// A link named `name` in `dir`.
    ///
    /// # Panics
    ///
    /// When the link cannot be created.
    pub fn new(dir: &Path, name: &str) -> Self {
        let (target, _) = stdio_command(Vec::<String>::new()).into_parts();
        let path = dir.join(name);
        std::os::unix::fs::symlink(&target, &path)
            .unwrap_or_else(|e| panic!("cannot link {}: {e}", path.display()));
        Self { path, target }
    }

    /// The link, to use as the server's `command`.
    pub fn command(&self) -> &Path {
        &self.path
    }

    /// Removes the link: the server cannot start again.
    ///
    /// # Panics
    ///
    /// When the link cannot be removed.
    pub fn break_it(&self) {
        std::fs::remove_file(&self.path)
            .unwrap_or_else(|e| panic!("cannot remove {}: {e}", self.path.display()));
    }

    /// Restores the link.
    ///
    /// # Panics
    ///
    /// When the link cannot be created.
    pub fn restore(&self) {
        std::os::unix::fs::symlink(&self.target, &self.path)
            .unwrap_or_else(|e| panic!("cannot restore {}: {e}", self.path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_alive_unless_a_zombie_or_dead_whatever_its_name() {
        assert!(alive("42 (tokio-rt-worker) S 1 42 42 0"));
        assert!(alive("42 (a) b) R 1"));
        assert!(!alive("42 (mcp:drv_crash) X 1 42"));
        assert!(!alive("42 (x) Z 1"));
        assert!(!alive("garbage"));
    }

    #[test]
    fn this_thread_is_among_the_live_threads_of_its_name() {
        let name = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
        // `/proc/thread-self` links to `<pid>/task/<tid>`.
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        let tid: u32 = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
        assert!(threads_named(name.trim_end()).contains(&tid));
    }
}
