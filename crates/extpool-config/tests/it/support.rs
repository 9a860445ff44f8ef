//! A project directory and a home directory to load configs from.

use std::path::{Path, PathBuf};

use extpool_config::Places;

/// A temporary project (`cwd`) and home, removed on drop.
pub struct Dirs {
    _root: tempfile::TempDir,
    pub cwd: PathBuf,
    pub home: PathBuf,
}

impl Dirs {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("a temporary directory");
        let cwd = root.path().join("project");
        let home = root.path().join("home");
        std::fs::create_dir_all(&cwd).expect("project dir");
        std::fs::create_dir_all(&home).expect("home dir");
        Self {
            _root: root,
            cwd,
            home,
        }
    }

    /// Discovery in this project and home, nowhere else.
    pub fn places(&self) -> Places {
        Places {
            cwd: self.cwd.clone(),
            home: Some(self.home.clone()),
            xdg_config_home: Some(self.home.join(".config")),
            appdata: None,
            codex_home: Some(self.home.join(".codex")),
            claude_config_dir: None,
            max_file_bytes: None,
            data_dir: None,
        }
    }

    /// Writes `text` (or bytes) at `rel` under the project.
    pub fn project(&self, rel: &str, text: impl AsRef<[u8]>) -> PathBuf {
        write(&self.cwd.join(rel), text)
    }

    /// Writes at `rel` under the home directory.
    pub fn home(&self, rel: &str, text: impl AsRef<[u8]>) -> PathBuf {
        write(&self.home.join(rel), text)
    }
}

fn write(path: &Path, text: impl AsRef<[u8]>) -> PathBuf {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("parent dir");
    }
    std::fs::write(path, text).expect("write");
    path.to_path_buf()
}

/// Runs `f` on another thread and fails the test if it has not returned
/// after `secs` seconds (a guard against a read that would block forever,
/// not a measure of speed).
pub fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .expect("finished (not blocked)")
}
