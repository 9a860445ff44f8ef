//! A plugin's files copied into the store, confined and bounded, and the
//! digest of what was copied.
//!
//! A symlink is followed only when it leads inside the folder copied (its
//! target is copied in its place); one that leads outside refuses the
//! whole copy, naming it. `.git` folders are left out. Sockets, devices
//! and pipes refuse the copy. Every file, the number of files and their
//! total size are bounded.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::StoreError;

/// Bounds on one copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyLimits {
    /// Most files (and folders) copied.
    pub max_files: usize,
    /// Largest file copied, in bytes.
    pub max_file_bytes: u64,
    /// Most bytes copied in all.
    pub max_total_bytes: u64,
}

impl Default for CopyLimits {
    fn default() -> Self {
        Self {
            max_files: 10_000,
            max_file_bytes: 64 << 20,
            max_total_bytes: 256 << 20,
        }
    }
}

struct Copy<'a> {
    root: PathBuf,
    limits: &'a CopyLimits,
    files: usize,
    bytes: u64,
}

impl Copy<'_> {
    fn refuse(&self, path: &Path, reason: impl Into<String>) -> StoreError {
        StoreError::Refused {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }

    fn count(&mut self, path: &Path, bytes: u64) -> Result<(), StoreError> {
        self.files += 1;
        self.bytes += bytes;
        if self.files > self.limits.max_files {
            return Err(self.refuse(
                path,
                format!("the plugin has more than {} files", self.limits.max_files),
            ));
        }
        if bytes > self.limits.max_file_bytes {
            return Err(self.refuse(
                path,
                format!("larger than {} bytes", self.limits.max_file_bytes),
            ));
        }
        if self.bytes > self.limits.max_total_bytes {
            return Err(self.refuse(
                path,
                format!(
                    "the plugin is larger than {} bytes",
                    self.limits.max_total_bytes
                ),
            ));
        }
        Ok(())
    }

    fn dir(&mut self, from: &Path, to: &Path, depth: usize) -> Result<(), StoreError> {
        if depth > 32 {
            return Err(self.refuse(from, "folders nested more than 32 deep"));
        }
        fs::create_dir_all(to).map_err(|e| StoreError::io(to, e))?;
        let mut entries: Vec<_> = fs::read_dir(from)
            .map_err(|e| StoreError::io(from, e))?
            .filter_map(Result::ok)
            .collect();
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let path = entry.path();
            let target = to.join(&name);
            let kind = entry.file_type().map_err(|e| StoreError::io(&path, e))?;
            let real = if kind.is_symlink() {
                let real = fs::canonicalize(&path).map_err(|e| {
                    self.refuse(&path, format!("a symlink that cannot be followed: {e}"))
                })?;
                if !real.starts_with(&self.root) {
                    return Err(self.refuse(
                        &path,
                        format!("a symlink to {} outside the plugin folder", real.display()),
                    ));
                }
                real
            } else {
                path.clone()
            };
            let meta = fs::metadata(&real).map_err(|e| StoreError::io(&real, e))?;
            if meta.is_dir() {
                self.count(&path, 0)?;
                self.dir(&real, &target, depth + 1)?;
            } else if meta.is_file() {
                self.count(&path, meta.len())?;
                fs::copy(&real, &target).map_err(|e| StoreError::io(&path, e))?;
            } else {
                return Err(self.refuse(&path, "not a regular file or folder"));
            }
        }
        Ok(())
    }
}

/// Copies folder `from` to `to` (created), confined and bounded (see the
/// module's documentation).
pub fn copy_tree(from: &Path, to: &Path, limits: &CopyLimits) -> Result<(), StoreError> {
    let root = fs::canonicalize(from).map_err(|e| StoreError::io(from, e))?;
    let mut copy = Copy {
        root: root.clone(),
        limits,
        files: 0,
        bytes: 0,
    };
    copy.dir(&root, to, 0)
}

#[cfg(unix)]
fn executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_meta: &fs::Metadata) -> bool {
    false
}

/// The content digest of folder `dir` (`sha256:<hex>`): every folder and
/// file by its relative path, with each file's executable bit and bytes,
/// in path order; symlinks and `.git` are not followed.
pub fn digest(dir: &Path) -> Result<String, StoreError> {
    let mut hasher = Sha256::new();
    let mut stack = vec![PathBuf::new()];
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(rel) = stack.pop() {
        let abs = dir.join(&rel);
        let mut entries: Vec<_> = fs::read_dir(&abs)
            .map_err(|e| StoreError::io(&abs, e))?
            .filter_map(Result::ok)
            .filter(|e| e.file_name() != ".git")
            .collect();
        // Reverse order on the stack: folders come out in path order.
        entries.sort_by_key(|e| std::cmp::Reverse(e.file_name()));
        let mut files = Vec::new();
        for e in entries {
            let child = rel.join(e.file_name());
            let kind = e
                .file_type()
                .map_err(|err| StoreError::io(&e.path(), err))?;
            if kind.is_dir() {
                stack.push(child);
            } else if kind.is_file() {
                files.push(child);
            }
        }
        hasher.update(b"D\0");
        hasher.update(rel.to_string_lossy().as_bytes());
        hasher.update(b"\0");
        for file in files.iter().rev() {
            let path = dir.join(file);
            let meta = fs::metadata(&path).map_err(|e| StoreError::io(&path, e))?;
            hasher.update(b"F\0");
            hasher.update(file.to_string_lossy().as_bytes());
            hasher.update(if executable(&meta) {
                b"\0x\0"
            } else {
                b"\0-\0"
            });
            hasher.update(meta.len().to_le_bytes());
            let mut f = fs::File::open(&path).map_err(|e| StoreError::io(&path, e))?;
            loop {
                let n = f.read(&mut buf).map_err(|e| StoreError::io(&path, e))?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
        }
    }
    Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_has_the_digest_of_its_source_and_escapes_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        fs::create_dir_all(src.join("a/.git")).unwrap();
        fs::write(src.join("a/x.txt"), "x").unwrap();
        fs::write(src.join("a/.git/HEAD"), "ref").unwrap();
        fs::write(src.join("y.txt"), "y").unwrap();
        let dst = tmp.path().join("dst");
        copy_tree(&src, &dst, &CopyLimits::default()).unwrap();
        assert!(!dst.join("a/.git").exists());
        assert_eq!(digest(&src).unwrap(), digest(&dst).unwrap());
        fs::write(dst.join("y.txt"), "z").unwrap();
        assert_ne!(digest(&src).unwrap(), digest(&dst).unwrap());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(tmp.path(), src.join("out")).unwrap();
            let err = copy_tree(&src, &tmp.path().join("d2"), &CopyLimits::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains("outside the plugin folder"), "{err}");
            assert!(err.contains("out"), "names it: {err}");
        }
        let tight = CopyLimits {
            max_files: 1,
            ..CopyLimits::default()
        };
        fs::remove_file(src.join("out")).ok();
        assert!(copy_tree(&src, &tmp.path().join("d3"), &tight).is_err());
    }
}
