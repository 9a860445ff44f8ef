//! File primitives of the store: private directories and files, atomic
//! replacement, and an advisory lock per profile.
//!
//! - A write goes to a fresh temporary file in the same directory (created
//!   0600), is flushed to disk, then renamed over the record, and the
//!   directory is synced: a crash at any point leaves either the old record
//!   or the new one, never a mix. Stale temporary files are ignored.
//! - The lock is the standard library's `File::lock` (`flock` on Unix,
//!   `LockFileEx` on Windows) on `<profile>.lock`; the kernel releases it
//!   when the holder exits, so a crashed process never leaves a store locked.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Creates `dir` (and parents) with owner-only permissions where new.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// Opens a new file for writing, owner read/write only, failing if it exists.
pub(crate) fn create_private_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Replaces `path` with `bytes` atomically.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Like [`write_atomic`], with the temporary file written by `fill` (tests
/// use it to stop a writer half way).
#[doc(hidden)]
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = temp_path(path);
    let result = (|| {
        let mut file = create_private_file(&tmp)?;
        fill(&mut file)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn temp_path(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}.{seq}.tmp", std::process::id()))
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// An exclusive lock on one profile of the store, released on drop.
#[derive(Debug)]
pub struct ProfileLock {
    file: File,
}

impl ProfileLock {
    /// Blocks until the lock on `path` is held.
    pub(crate) fn acquire(path: &Path) -> std::io::Result<Self> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(path)?;
        file.lock()?;
        Ok(Self { file })
    }
}

impl Drop for ProfileLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r");
        write_atomic(&path, b"old").expect("write");
        let err = write_atomic_with(&path, |f| {
            f.write_all(b"ne")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read(&path).expect("read"), b"old");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("r")]);
    }

    #[cfg(unix)]
    #[test]
    fn files_and_dirs_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("a/b");
        create_private_dir(&sub).expect("mkdir");
        let mode = std::fs::metadata(&sub).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let path = sub.join("r");
        write_atomic(&path, b"x").expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
