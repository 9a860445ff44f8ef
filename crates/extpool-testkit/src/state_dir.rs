//! [`StateDir`]: a temporary `--state-dir` for one test, with readers for
//! what the server recorded there.

use std::path::Path;

use crate::state::{self, CRASH_MARKER};

/// A temporary state directory for the test server (`--state-dir`),
/// removed on drop.
///
/// Give [`StateDir::path`] to the server, then read back what really ran:
/// [`StateDir::counter`] for a tool counter, [`StateDir::starts`] for the
/// number of process starts.
#[derive(Debug)]
pub struct StateDir {
    dir: tempfile::TempDir,
}

impl StateDir {
    /// A new, empty state directory.
    ///
    /// # Panics
    ///
    /// When no temporary directory can be created.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("extpool-testkit-state-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temporary state directory: {e}"));
        Self { dir }
    }

    /// The directory, to pass as `--state-dir`.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The `--state-dir DIR` arguments for the server.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--state-dir".to_owned(),
            self.path().to_string_lossy().into_owned(),
        ]
    }

    /// The value of counter `key` (0 when never incremented).
    ///
    /// # Panics
    ///
    /// When `key` is not a valid counter key or the counter file is
    /// unreadable.
    pub fn counter(&self, key: &str) -> u64 {
        state::read_counter(self.path(), key)
            .unwrap_or_else(|e| panic!("reading counter {key:?}: {e}"))
    }

    /// How many calls arrived at `barrier` `key` (over every process that
    /// used this state directory).
    ///
    /// # Panics
    ///
    /// As [`StateDir::counter`].
    pub fn arrivals(&self, key: &str) -> u64 {
        self.counter(&crate::server::arrivals_counter(key))
    }

    /// Waits until `check` holds for what the servers recorded here,
    /// looking again each time a file in the directory changes (no
    /// polling). Unbounded: wrap it in the test's own timeout.
    ///
    /// # Panics
    ///
    /// When the directory cannot be watched.
    pub async fn wait_for(&self, mut check: impl FnMut(&Self) -> bool) {
        use notify::{RecursiveMode, Watcher};
        let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |_event| {
            let _ = tx.send(());
        })
        .unwrap_or_else(|e| panic!("cannot watch the state directory: {e}"));
        // Counters live in a subdirectory: there before the watch, so no
        // file created in it can come before its watch.
        let counters = self.path().join(state::COUNTERS_DIR);
        std::fs::create_dir_all(&counters)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", counters.display()));
        watcher
            .watch(self.path(), RecursiveMode::Recursive)
            .unwrap_or_else(|e| panic!("cannot watch the state directory: {e}"));
        // Watching first, then looking: a change between the two is seen.
        while !check(self) {
            if changes.recv().await.is_none() {
                panic!("the state directory's watcher stopped");
            }
        }
    }

    /// [`StateDir::wait_for`], failing the test after `patience`, saying
    /// what never happened.
    ///
    /// # Panics
    ///
    /// After `patience`, with `what`.
    pub async fn until(
        &self,
        what: &str,
        patience: std::time::Duration,
        check: impl FnMut(&Self) -> bool,
    ) {
        tokio::time::timeout(patience, self.wait_for(check))
            .await
            .unwrap_or_else(|_| panic!("never happened: {what}"));
    }

    /// How many times a server process started with this state directory.
    ///
    /// # Panics
    ///
    /// When the start log is unreadable.
    pub fn starts(&self) -> u64 {
        state::read_starts(self.path()).unwrap_or_else(|e| panic!("reading the start log: {e}"))
    }

    /// The process ids of every start recorded, oldest first.
    ///
    /// # Panics
    ///
    /// When the start log is unreadable.
    pub fn pids(&self) -> Vec<u32> {
        state::read_pids(self.path()).unwrap_or_else(|e| panic!("reading the start log: {e}"))
    }

    /// The HTTP requests the server received (HTTP mode), oldest first:
    /// each `{"method", "headers": {name: value}, "authorization_sha256"}`
    /// with the `mcp-*` headers, and the SHA-256 (hex) of the
    /// `Authorization` header instead of its value.
    ///
    /// # Panics
    ///
    /// When the request log is unreadable.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        state::read_requests(self.path()).unwrap_or_else(|e| panic!("reading the request log: {e}"))
    }

    /// Whether `crash {once: true}` has crashed the server already.
    pub fn crashed(&self) -> bool {
        self.path().join(CRASH_MARKER).exists()
    }
}

impl Default for StateDir {
    fn default() -> Self {
        Self::new()
    }
}
