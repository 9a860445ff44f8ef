//! [`SmallDisk`]: a real, small file system (a tmpfs) that a test fills
//! up and frees again, to see what a program does when its disk is full —
//! the operating system's own `ENOSPC`, not an imitation of it.
//!
//! Mounting needs the privilege to mount: root, or a user and mount
//! namespace of the test's own (`unshare -rm cargo test …`). Without it the
//! test fails saying so; it never skips.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs of a few hundred kilobytes, mounted on a temporary directory
/// and unmounted (the directory removed) on drop.
#[derive(Debug)]
pub struct SmallDisk {
    dir: tempfile::TempDir,
    filler: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `bytes` (rounded up to whole pages).
    ///
    /// # Panics
    ///
    /// When it cannot be mounted (no privilege to mount), saying how to
    /// run the test.
    pub fn mount(bytes: u64) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("extpool-small-disk-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a mount point: {e}"));
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes},mode=0700")])
            .arg("tmpfs")
            .arg(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run mount(8): {e}"));
        assert!(
            out.status.success(),
            "this test needs a small tmpfs of its own and could not mount one ({}): run it as \
             root, or in a user and mount namespace of its own (unshare -rm cargo test …)",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        let filler = dir.path().join("filler");
        Self { dir, filler }
    }

    /// The mounted directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Takes every free byte with a file of its own, until the file system
    /// answers "no space left on device"; returns how many bytes it took.
    ///
    /// # Panics
    ///
    /// When writing fails otherwise, or the disk never fills.
    pub fn fill(&self) -> u64 {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.filler)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", self.filler.display()));
        let block = [0u8; 4096];
        let mut taken = 0u64;
        // A tmpfs of this size holds far fewer blocks than this.
        for _ in 0..(1 << 20) {
            match file.write(&block) {
                Ok(0) => break,
                Ok(n) => taken += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => {
                    return taken;
                }
                Err(e) => panic!("filling {}: {e}", self.filler.display()),
            }
        }
        panic!("{} never filled", self.path().display())
    }

    /// Gives back what [`SmallDisk::fill`] took.
    ///
    /// # Panics
    ///
    /// When the filler cannot be removed.
    pub fn free(&self) {
        match std::fs::remove_file(&self.filler) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("cannot remove {}: {e}", self.filler.display()),
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazily: a process of the test that still has a file open there
        // does not keep the mount (nor the directory) behind.
        let unmounted = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
        if !matches!(unmounted, Ok(s) if s.success()) {
            tracing::warn!("cannot unmount {}", self.dir.path().display());
        }
    }
}
