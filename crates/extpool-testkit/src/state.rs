//! The on-disk layout of the test server's persistent state, shared by the
//! server (which writes it) and the test helpers (which read it).
//!
//! Tests need to count how often something really ran on the server side —
//! across reconnects and process restarts — to prove that a call was executed
//! exactly once or that a client restarted a server only once. The server
//! therefore keeps its counters in plain files under a state directory:
//!
//! - `starts`: one line appended per process start;
//! - `counters/<key>`: the decimal value of counter `key`;
//! - `crashed`: marker written by the `crash {once: true}` tool;
//! - `requests.jsonl`: over HTTP, one JSON line per POST (see
//!   [`append_request`]).
//!
//! Without a state directory the counters live in memory and die with the
//! process.

use std::{
    collections::HashMap,
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    sync::Mutex,
};

/// File (under the state directory) that gets one line per process start.
pub const STARTS_FILE: &str = "starts";
/// Marker file (under the state directory) created by `crash {once: true}`.
pub const CRASH_MARKER: &str = "crashed";
/// File (under the state directory) with one JSON line per HTTP POST.
pub const REQUESTS_FILE: &str = "requests.jsonl";

/// Directory (under the state directory) holding one file per counter.
pub const COUNTERS_DIR: &str = "counters";

/// Longest accepted counter key, so a key always makes a sane file name.
const MAX_KEY_LEN: usize = 64;

/// Why a state operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The counter key is not 1–64 characters of `[A-Za-z0-9_.-]` (or starts
    /// with a dot); such keys are refused so a key can never escape the
    /// counters directory.
    #[error("invalid counter key {0:?}: use 1-64 characters of A-Z a-z 0-9 _ . - (no leading dot)")]
    InvalidKey(String),
    /// A counter file exists but does not hold a decimal number.
    #[error("counter file {path} is corrupt: {content:?}")]
    Corrupt {
        /// The counter file.
        path: PathBuf,
        /// What it held.
        content: String,
    },
    /// Reading or writing a state file failed.
    #[error("state file {path}: {error}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error (shown in the message, so not a `source()`).
        error: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> StateError + '_ {
    move |source| StateError::Io {
        path: path.to_path_buf(),
        error: source,
    }
}

/// Checks that `key` is usable as a counter name (and file name).
pub fn validate_key(key: &str) -> Result<(), StateError> {
    let ok = !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StateError::InvalidKey(key.to_owned()))
    }
}

/// The file that holds counter `key` under state directory `dir`.
pub fn counter_path(dir: &Path, key: &str) -> Result<PathBuf, StateError> {
    validate_key(key)?;
    Ok(dir.join(COUNTERS_DIR).join(key))
}

/// Reads counter `key` from state directory `dir`; a counter never
/// incremented reads as 0.
pub fn read_counter(dir: &Path, key: &str) -> Result<u64, StateError> {
    let path = counter_path(dir, key)?;
    read_counter_file(&path)
}

fn read_counter_file(path: &Path) -> Result<u64, StateError> {
    match fs::read_to_string(path) {
        Ok(content) => content.trim().parse().map_err(|_| StateError::Corrupt {
            path: path.to_path_buf(),
            content,
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(io_error(path)(e)),
    }
}

/// Number of process starts recorded in state directory `dir`.
pub fn read_starts(dir: &Path) -> Result<u64, StateError> {
    let path = dir.join(STARTS_FILE);
    match fs::read_to_string(&path) {
        Ok(content) => Ok(content.lines().filter(|l| !l.trim().is_empty()).count() as u64),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(io_error(&path)(e)),
    }
}

/// The process ids of the starts recorded in `dir`, oldest first.
pub fn read_pids(dir: &Path) -> Result<Vec<u32>, StateError> {
    let path = dir.join(STARTS_FILE);
    match fs::read_to_string(&path) {
        Ok(content) => Ok(content
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pid=")?.parse().ok())
            .collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io_error(&path)(e)),
    }
}

/// Appends one line for this process start to `dir/starts` and returns the
/// number of starts recorded so far (this one included).
///
/// A single `write` of a short line to a file opened with `O_APPEND` is atomic
/// on local filesystems, so concurrent starts never lose a line.
pub fn record_start(dir: &Path) -> Result<u64, StateError> {
    fs::create_dir_all(dir).map_err(io_error(dir))?;
    let path = dir.join(STARTS_FILE);
    let line = format!("pid={}\n", std::process::id());
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(io_error(&path))?;
    read_starts(dir)
}

/// Appends `record` (one HTTP request, as JSON) to `dir/requests.jsonl`:
/// one `write` of one line to a file opened with `O_APPEND`, so concurrent
/// requests never interleave.
pub fn append_request(dir: &Path, record: &serde_json::Value) -> Result<(), StateError> {
    fs::create_dir_all(dir).map_err(io_error(dir))?;
    let path = dir.join(REQUESTS_FILE);
    let mut line = record.to_string();
    line.push('\n');
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(io_error(&path))
}

/// The HTTP requests recorded in `dir`, oldest first (lines that do not
/// parse, such as one being written, are skipped).
pub fn read_requests(dir: &Path) -> Result<Vec<serde_json::Value>, StateError> {
    let path = dir.join(REQUESTS_FILE);
    match fs::read_to_string(&path) {
        Ok(content) => Ok(content
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io_error(&path)(e)),
    }
}

/// Named counters of one server process: files under a state directory, or
/// in memory when the server runs without one.
///
/// Increments are serialised by an in-process mutex and written to a
/// temporary file that is then renamed over the counter file, so a reader
/// (a test, or the next server process) never sees a half-written value and
/// concurrent calls never lose an increment.
#[derive(Debug)]
pub struct Counters {
    dir: Option<PathBuf>,
    memory: Mutex<HashMap<String, u64>>,
}

impl Counters {
    /// Counters stored under `dir` (persistent), or in memory when `None`.
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            memory: Mutex::new(HashMap::new()),
        }
    }

    /// The state directory, if the counters are persistent.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Adds one to counter `key` and returns the new value.
    pub fn increment(&self, key: &str) -> Result<u64, StateError> {
        validate_key(key)?;
        // The map doubles as the lock for the file-backed case.
        let mut memory = self
            .memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(dir) = &self.dir else {
            let value = memory.entry(key.to_owned()).or_insert(0);
            *value += 1;
            return Ok(*value);
        };
        let counters = dir.join(COUNTERS_DIR);
        fs::create_dir_all(&counters).map_err(io_error(&counters))?;
        let path = counters.join(key);
        let value = read_counter_file(&path)? + 1;
        let tmp = counters.join(format!(".{key}.{}.tmp", std::process::id()));
        fs::write(&tmp, format!("{value}\n")).map_err(io_error(&tmp))?;
        fs::rename(&tmp, &path).map_err(io_error(&path))?;
        memory.insert(key.to_owned(), value);
        Ok(value)
    }

    /// Reads counter `key` without changing it.
    pub fn get(&self, key: &str) -> Result<u64, StateError> {
        validate_key(key)?;
        let memory = self
            .memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &self.dir {
            Some(dir) => read_counter(dir, key),
            None => Ok(memory.get(key).copied().unwrap_or(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_validated() {
        for good in ["default", "a", "fail", "x.y-z_1"] {
            assert!(validate_key(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "a/b", "..", "with space", &"k".repeat(65)] {
            assert!(validate_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn file_counters_persist_across_instances() {
        let dir = tempfile::tempdir().unwrap();
        let a = Counters::new(Some(dir.path().to_path_buf()));
        assert_eq!(a.increment("k").unwrap(), 1);
        assert_eq!(a.increment("k").unwrap(), 2);
        let b = Counters::new(Some(dir.path().to_path_buf()));
        assert_eq!(b.get("k").unwrap(), 2);
        assert_eq!(b.increment("k").unwrap(), 3);
        assert_eq!(read_counter(dir.path(), "k").unwrap(), 3);
        assert_eq!(read_counter(dir.path(), "never").unwrap(), 0);
    }

    #[test]
    fn memory_counters_count() {
        let c = Counters::new(None);
        assert_eq!(c.get("k").unwrap(), 0);
        assert_eq!(c.increment("k").unwrap(), 1);
        assert_eq!(c.get("k").unwrap(), 1);
    }

    #[test]
    fn starts_are_appended() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_starts(dir.path()).unwrap(), 0);
        assert_eq!(record_start(dir.path()).unwrap(), 1);
        assert_eq!(record_start(dir.path()).unwrap(), 2);
    }
}
