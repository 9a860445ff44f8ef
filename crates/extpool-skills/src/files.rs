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
