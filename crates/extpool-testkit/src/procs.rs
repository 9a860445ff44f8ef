//! Processes seen from a test: which live processes carry a marker in
//! their command line (a server's `--state-dir`), waiting until they are
//! gone, killing one the way a crash would, and a link to the server binary
//! that a test can break and restore to make the server impossible to start
//! again and possible again.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::stdio_command;

/// How long [`wait_until_gone`] waits before failing the test.
pub const GONE_PATIENCE: Duration = Duration::from_secs(10);

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

/// Waits until no live process carries `marker`.
///
/// # Panics
///
/// After [`GONE_PATIENCE`], with the pids that remain.
pub async fn wait_until_gone(marker: &str) {
    let deadline = Instant::now() + GONE_PATIENCE;
    loop {
        let pids = pids_with(marker);
        if pids.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes still running: {pids:?} ({marker})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    let fd = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .map(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()));
    let Some(Ok(fd)) = fd else {
        return; // no such process (ESRCH): gone already
    };
    // The kernel's own wait (poll on the pidfd), on a blocking thread.
    let waited = tokio::task::spawn_blocking(move || {
        let timeout = rustix::event::Timespec::try_from(GONE_PATIENCE)
            .unwrap_or_else(|e| panic!("patience out of range: {e}"));
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        loop {
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Err(rustix::io::Errno::INTR) => {}
                other => return other,
            }
        }
    })
    .await
    .unwrap_or_else(|e| panic!("waiting on process {pid}: {e}"));
    match waited {
        Ok(0) => panic!("process {pid} still running after {GONE_PATIENCE:?}"),
        Ok(_) => {}
        Err(e) => panic!("cannot wait on process {pid}: {e}"),
    }
}

/// Kills (SIGKILL, like a crash) the one live process carrying `marker`,
/// waits until it is gone, and returns its pid.
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
    wait_until_gone(marker).await;
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
