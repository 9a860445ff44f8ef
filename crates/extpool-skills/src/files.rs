//! Reads of a skill's files (`skill://<name>/<path>`), confined to the
//! skill's directory.
//!
//! A relative path is refused before touching the disk when it is absolute,
//! has a `..` segment, a backslash or a NUL. It is then resolved with every
//! symlink followed, and refused unless the result is inside the skill's
//! (canonical) directory. The resolved file is opened without following a
//! symlink and its identity compared with what was resolved, so a symlink
//! swapped in between is caught. Files over the size cap are refused; files
//! that are not UTF-8 text come back as bytes with a MIME type.

use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::discover::open_nofollow;

/// Default largest file served, in bytes (the SEP-2640 per-skill budget).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Why a skill file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The relative path is malformed or tries to leave the skill.
    #[error("refused path {path:?}: {reason}")]
    InvalidPath {
        /// The path as asked.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The path resolves (through a symlink) outside the skill directory.
    #[error("refused path {path:?}: it resolves outside the skill directory")]
    Escapes {
        /// The path as asked.
        path: String,
    },
    /// No such file in the skill.
    #[error("no such file in the skill: {path:?}")]
    NotFound {
        /// The path as asked.
        path: String,
    },
    /// The path names a directory or something else that is not a file.
    #[error("not a regular file: {path:?}")]
    NotAFile {
        /// The path as asked.
        path: String,
    },
    /// The file is larger than the cap.
    #[error("{path:?} is {size} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// The path as asked.
        path: String,
        /// Its size.
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// The path names a file or something else that is not a directory.
    #[error("not a directory: {path:?}")]
    NotADirectory {
        /// The path as asked.
        path: String,
    },
    /// The path passes through a symlink that leads back to a folder
    /// holding it (`self -> .`): following it would never end.
    #[error(
        "refused path {path:?}: {link:?} is a symlink loop (it leads back to a folder that holds it)"
    )]
    Loop {
        /// The path as asked.
        path: String,
        /// The part of it that is the loop.
        link: String,
    },
    /// The directory has more children than are listed.
    #[error("{path:?} has more than {limit} entries")]
    TooManyEntries {
        /// The path as asked.
        path: String,
        /// The cap.
        limit: usize,
    },
    /// Reading failed.
    #[error("cannot read {}: {error}", path.display())]
    Io {
        /// The resolved file.
        path: PathBuf,
        /// The underlying error (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
}

impl FileError {
    /// True when the read was refused for leaving the skill directory.
    pub fn is_confinement(&self) -> bool {
        matches!(self, Self::InvalidPath { .. } | Self::Escapes { .. })
    }
}

/// The content of a skill file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileContent {
    /// UTF-8 text.
    Text(String),
    /// Anything else.
    Binary(Vec<u8>),
}

/// A file read from a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The path relative to the skill directory, normalised.
    pub path: String,
    /// MIME type from the extension (`application/octet-stream` for unknown binaries).
    pub mime_type: String,
    /// The content.
    pub content: FileContent,
}

/// Checks a relative path and returns it normalised (`./a//b` → `a/b`).
pub fn normalize_relative(rel: &str) -> Result<String, FileError> {
    let refuse = |reason| FileError::InvalidPath {
        path: rel.to_owned(),
        reason,
    };
    if rel.contains('\0') {
        return Err(refuse("contains a NUL byte"));
    }
    if rel.contains('\\') {
        return Err(refuse("contains a backslash"));
    }
    if rel.starts_with('/') {
        return Err(refuse("absolute paths are not allowed"));
    }
    let bytes = rel.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Err(refuse("absolute paths are not allowed"));
    }
    let mut parts = Vec::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => return Err(refuse("'..' segments are not allowed")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse("absolute paths are not allowed"));
            }
        }
    }
    if parts.is_empty() {
        return Err(refuse("empty path"));
    }
    Ok(parts.join("/"))
}

/// Resolves `rel` inside `canonical_dir` (which must already be canonical).
pub fn resolve_confined(canonical_dir: &Path, rel: &str) -> Result<PathBuf, FileError> {
    let norm = normalize_relative(rel)?;
    let joined = canonical_dir.join(&norm);
    let resolved = match fs::canonicalize(&joined) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(FileError::NotFound { path: norm });
        }
        Err(source) => {
            return Err(FileError::Io {
                path: joined,
                error: source,
            });
        }
    };
    if !resolved.starts_with(canonical_dir) {
        tracing::warn!(path = %norm, resolved = %resolved.display(), "skill file read refused: escapes the skill directory");
        return Err(FileError::Escapes { path: norm });
    }
    Ok(resolved)
}

/// Reads `rel` from a skill directory, confined and capped.
pub fn read_confined(
    canonical_dir: &Path,
    rel: &str,
    max_bytes: u64,
) -> Result<SkillFile, FileError> {
    let resolved = resolve_confined(canonical_dir, rel)?;
    let norm = normalize_relative(rel)?;
    let io = |source| FileError::Io {
        path: resolved.clone(),
        error: source,
    };
    let expected = fs::metadata(&resolved).map_err(io)?;
    if !expected.is_file() {
        return Err(FileError::NotAFile { path: norm });
    }
    let file = match open_nofollow(&resolved) {
        Ok(f) => f,
        Err(e) if crate::discover::is_symlink_refusal(&e, &resolved) => {
            return Err(FileError::Escapes { path: norm });
        }
        Err(e) => return Err(io(e)),
    };
    let actual = file.metadata().map_err(io)?;
    if !same_file(&expected, &actual) {
        return Err(FileError::Escapes { path: norm });
    }
    if actual.len() > max_bytes {
        return Err(FileError::TooLarge {
            path: norm,
            size: actual.len(),
            limit: max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(actual.len() as usize);
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(FileError::TooLarge {
            path: norm,
            size: bytes.len() as u64,
            limit: max_bytes,
        });
    }
    let ext_mime = mime_for(&norm);
    let content = match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') && !is_binary_mime(ext_mime) => FileContent::Text(text),
        Ok(text) => FileContent::Binary(text.into_bytes()),
        Err(e) => FileContent::Binary(e.into_bytes()),
    };
    let mime_type = match (&content, ext_mime) {
        (FileContent::Binary(_), m) if m.starts_with("text/") => "application/octet-stream",
        (_, m) => m,
    };
    Ok(SkillFile {
        path: norm,
        mime_type: mime_type.to_owned(),
        content,
    })
}

/// One direct child of a skill folder, as [`list_confined`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirChild {
    /// Its path relative to the skill directory, normalised.
    pub path: String,
    /// True for a folder.
    pub is_dir: bool,
}

impl DirChild {
    /// Its MIME type in a directory listing: `inode/directory` for a
    /// folder (SEP-2640), else the one of its name.
    pub fn mime_type(&self) -> &'static str {
        if self.is_dir {
            extpool_core::DIRECTORY_MIME_TYPE
        } else {
            mime_for(&self.path)
        }
    }
}

/// The part of `norm` (a normalised path in `canonical_dir`) that is a
/// symlink back to a folder holding it (`self -> .`, `up -> ..`), if any:
/// a path through it names the same folders again without end.
fn through_loop(canonical_dir: &Path, norm: &str) -> Option<String> {
    let mut holder = canonical_dir.to_path_buf();
    let mut prefix = String::new();
    for part in norm.split('/') {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        let here = canonical_dir.join(&prefix);
        let is_link = fs::symlink_metadata(&here).is_ok_and(|m| m.file_type().is_symlink());
        holder = if is_link {
            let target = fs::canonicalize(&here).ok()?;
            if holder.starts_with(&target) {
                return Some(prefix);
            }
            target
        } else {
            holder.join(part)
        };
    }
    None
}

/// The direct children of `rel` in a skill directory (`""` is the skill's
/// own folder), sorted by name, confined as [`read_confined`] is: `rel`
/// through [`resolve_confined`], and a child that is a symlink listed only
/// when it resolves inside the skill (as the file or folder it names).
/// A symlink loop (one that leads back to a folder holding it) is never
/// listed, and a `rel` through one is refused naming it, so a client that
/// walks every folder it is given comes to an end. Hidden children (a
/// leading `.`) and names that are not UTF-8 are left out, as the skill's
/// manifest leaves them out; more than `max_entries` children is an
/// error, so a listing is bounded.
pub fn list_confined(
    canonical_dir: &Path,
    rel: &str,
    max_entries: usize,
) -> Result<Vec<DirChild>, FileError> {
    let (dir, norm) = if rel.is_empty() {
        (canonical_dir.to_path_buf(), String::new())
    } else {
        let resolved = resolve_confined(canonical_dir, rel)?;
        let norm = normalize_relative(rel)?;
        if let Some(link) = through_loop(canonical_dir, &norm) {
            return Err(FileError::Loop { path: norm, link });
        }
        (resolved, norm)
    };
    let io = |error| FileError::Io {
        path: dir.clone(),
        error,
    };
    let before = fs::symlink_metadata(&dir).map_err(io)?;
    if !before.is_dir() {
        return Err(FileError::NotADirectory { path: norm });
    }
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let path = if norm.is_empty() {
            name
        } else {
            format!("{norm}/{name}")
        };
        let kind = entry.file_type().map_err(io)?;
        let is_dir = if kind.is_symlink() {
            let Ok(target) = resolve_confined(canonical_dir, &path) else {
                continue;
            };
            match fs::metadata(&target) {
                Ok(meta) if meta.is_dir() && dir.starts_with(&target) => {
                    tracing::debug!(path, "a symlink loop in a skill is not listed");
                    continue;
                }
                Ok(meta) if meta.is_dir() || meta.is_file() => meta.is_dir(),
                _ => continue,
            }
        } else if kind.is_dir() || kind.is_file() {
            kind.is_dir()
        } else {
            continue;
        };
        if out.len() == max_entries {
            return Err(FileError::TooManyEntries {
                path: norm,
                limit: max_entries,
            });
        }
        out.push(DirChild { path, is_dir });
    }
    // The folder listed is the one resolved: not swapped for a symlink since.
    let after = fs::symlink_metadata(&dir).map_err(io)?;
    if !same_file(&before, &after) {
        return Err(FileError::Escapes { path: norm });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

fn is_binary_mime(mime: &str) -> bool {
    !(mime.starts_with("text/")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/toml"
                | "application/javascript"
                | "image/svg+xml"
        ))
}

/// The MIME type of a file from its extension (`text/plain` when unknown,
/// since most supporting files are text; binary content overrides it).
pub fn mime_for(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "text" => "text/plain",
        "py" => "text/x-python",
        "sh" | "bash" => "text/x-shellscript",
        "js" | "mjs" | "cjs" => "application/javascript",
        "ts" => "text/x-typescript",
        "rs" => "text/x-rust",
        "rb" => "text/x-ruby",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "xml" => "application/xml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "wasm" => "application/wasm",
        "ttf" => "font/ttf",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        _ => "text/plain",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_normalised_or_refused() {
        assert_eq!(normalize_relative("./a//b.md").unwrap(), "a/b.md");
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a\\b",
            "C:/x",
            "",
            ".",
            "a\0b",
        ] {
            let e = normalize_relative(bad).unwrap_err();
            assert!(e.is_confinement(), "{bad:?}: {e}");
        }
    }

    #[test]
    fn folders_list_their_direct_children_confined() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        let dir = root.join("skill");
        fs::create_dir_all(dir.join("refs/deep")).unwrap();
        fs::write(dir.join("SKILL.md"), "x").unwrap();
        fs::write(dir.join("refs/a.md"), "a").unwrap();
        fs::write(dir.join("refs/deep/b.md"), "b").unwrap();
        fs::write(dir.join(".hidden"), "h").unwrap();
        fs::write(root.join("outside.md"), "secret").unwrap();
        let child = |path: &str, is_dir| DirChild {
            path: path.into(),
            is_dir,
        };
        assert_eq!(
            list_confined(&dir, "", 10).unwrap(),
            vec![child("SKILL.md", false), child("refs", true)]
        );
        assert_eq!(
            list_confined(&dir, "./refs", 10).unwrap(),
            vec![child("refs/a.md", false), child("refs/deep", true)]
        );
        assert!(matches!(
            list_confined(&dir, "SKILL.md", 10),
            Err(FileError::NotADirectory { .. })
        ));
        assert!(matches!(
            list_confined(&dir, "nope", 10),
            Err(FileError::NotFound { .. })
        ));
        assert!(list_confined(&dir, "../", 10).unwrap_err().is_confinement());
        assert!(matches!(
            list_confined(&dir, "", 1),
            Err(FileError::TooManyEntries { limit: 1, .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_skill_are_neither_listed_nor_listable() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        let dir = root.join("skill");
        fs::create_dir_all(dir.join("refs")).unwrap();
        fs::create_dir_all(root.join("elsewhere")).unwrap();
        fs::write(root.join("elsewhere/secret.md"), "s").unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), dir.join("out")).unwrap();
        std::os::unix::fs::symlink(dir.join("refs"), dir.join("inside")).unwrap();
        let listed: Vec<String> = list_confined(&dir, "", 10)
            .unwrap()
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(listed, ["inside", "refs"]);
        assert!(matches!(
            list_confined(&dir, "out", 10),
            Err(FileError::Escapes { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_walk_of_every_listed_folder_ends_however_symlinks_loop() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(dir.join("a/b")).unwrap();
        fs::write(dir.join("a/b/f.md"), "f").unwrap();
        for (target, link) in [
            (".", "self"),
            ("..", "a/up"),
            ("../../a", "a/b/top"),
            ("b", "a/alias"),
        ] {
            std::os::unix::fs::symlink(target, dir.join(link)).unwrap();
        }
        // Every folder listed is walked, as a client would.
        let mut walked = Vec::new();
        let mut folders = vec![String::new()];
        while let Some(rel) = folders.pop() {
            assert!(walked.len() < 100, "the walk does not end: {walked:?}");
            for child in list_confined(&dir, &rel, 10).unwrap() {
                if child.is_dir {
                    folders.push(child.path);
                }
            }
            walked.push(rel);
        }
        walked.sort();
        assert_eq!(walked, ["", "a", "a/alias", "a/b"]);
        for (rel, link) in [
            ("self", "self"),
            ("a/up/a", "a/up"),
            ("a/b/top/b", "a/b/top"),
        ] {
            match list_confined(&dir, rel, 10) {
                Err(FileError::Loop { link: got, .. }) => assert_eq!(got, link, "{rel}"),
                other => panic!("{rel}: {other:?}"),
            }
        }
    }

    #[test]
    fn mime_types() {
        assert_eq!(mime_for("references/x.md"), "text/markdown");
        assert_eq!(mime_for("assets/logo.PNG"), "image/png");
        assert_eq!(mime_for("scripts/run"), "text/plain");
    }

    #[test]
    fn reads_text_and_binary_with_a_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(tmp.path()).unwrap();
        fs::write(dir.join("a.md"), "# A\n").unwrap();
        fs::write(dir.join("logo.png"), [0x89, b'P', b'N', b'G', 0, 1]).unwrap();
        fs::write(dir.join("data"), [0xff, 0xfe, 0]).unwrap();
        fs::write(dir.join("big.txt"), "x".repeat(100)).unwrap();
        let a = read_confined(&dir, "a.md", 1024).unwrap();
        assert_eq!(a.content, FileContent::Text("# A\n".into()));
        assert_eq!(a.mime_type, "text/markdown");
        let png = read_confined(&dir, "logo.png", 1024).unwrap();
        assert_eq!(png.mime_type, "image/png");
        assert!(matches!(png.content, FileContent::Binary(ref b) if b.len() == 6));
        let data = read_confined(&dir, "data", 1024).unwrap();
        assert_eq!(data.mime_type, "application/octet-stream");
        assert!(matches!(
            read_confined(&dir, "big.txt", 10),
            Err(FileError::TooLarge {
                size: 100,
                limit: 10,
                ..
            })
        ));
        assert!(matches!(
            read_confined(&dir, "missing.md", 10),
            Err(FileError::NotFound { .. })
        ));
        fs::create_dir(dir.join("sub")).unwrap();
        assert!(matches!(
            read_confined(&dir, "sub", 10),
            Err(FileError::NotAFile { .. })
        ));
    }
}
