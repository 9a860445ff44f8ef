//! Filesystem access confined to a plugin's root, bounded reads and
//! bounded walks.
//!
//! Every path a plugin names — a fixed location (`skills/`, `.mcp.json`),
//! a path in its manifest (`"commands": "./extra"`), an entry found while
//! walking a folder — is resolved with every symlink followed and refused
//! unless the result lies inside the plugin's resolved root (Agent Plugins
//! 1.0 §4.1, and how Claude Code and Codex treat `./` paths). A refusal
//! names the path as written and where it leads.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use crate::diag::{Diagnostic, DiagnosticKind, Severity};

/// What a location inside a plugin resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// Nothing there.
    Missing,
    /// A regular file (the resolved path).
    File(PathBuf),
    /// A directory (the resolved path).
    Dir(PathBuf),
    /// Something else (a socket, a device, a dangling link).
    Other(PathBuf),
}

/// Why a path of a plugin was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PathError {
    /// Not a relative path that stays inside the root when read lexically.
    #[error("{path:?} is not a relative path inside the plugin ({reason})")]
    NotRelative {
        /// As written.
        path: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// Resolves (through a symlink) outside the plugin's root.
    #[error("{path:?} resolves to {} outside the plugin root {}; refused", resolved.display(), root.display())]
    Escapes {
        /// As written.
        path: String,
        /// Where it leads.
        resolved: PathBuf,
        /// The plugin's resolved root.
        root: PathBuf,
    },
    /// It could not be examined.
    #[error("cannot read {}: {error}", path.display())]
    Io {
        /// The path joined to the root.
        path: PathBuf,
        /// The failure.
        error: io::Error,
    },
}

/// A plugin's root with its symlinks resolved: every path of the plugin
/// is checked against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Root {
    /// The resolved root.
    pub canonical: PathBuf,
}

/// Whether a `/`-separated relative path, read lexically, stays at or
/// below its starting folder (`a/../b` does, `a/../../b` does not).
pub(crate) fn lexically_contained(path: &str) -> bool {
    let mut depth: i64 = 0;
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => depth += 1,
        }
    }
    true
}

/// Checks a path written in a plugin's file (`./commands/x.md`, `skills`):
/// relative, without a backslash or NUL, staying inside when read
/// lexically. Returns it without its leading `./`.
pub(crate) fn relative(path: &str) -> Result<&str, PathError> {
    let refuse = |reason| PathError::NotRelative {
        path: path.to_owned(),
        reason,
    };
    if path.contains('\0') || path.contains('\\') {
        return Err(refuse("it contains a NUL or a backslash"));
    }
    if path.starts_with('/') || Path::new(path).has_root() {
        return Err(refuse("absolute paths are not allowed"));
    }
    if Path::new(path)
        .components()
        .any(|c| matches!(c, Component::Prefix(_)))
    {
        return Err(refuse("absolute paths are not allowed"));
    }
    if !lexically_contained(path) {
        return Err(refuse("it leaves the plugin with `..`"));
    }
    let rest = path.trim_start_matches("./");
    if rest.is_empty() || rest == "." {
        return Err(refuse("it names the plugin root itself"));
    }
    Ok(rest)
}

impl Root {
    /// The root of the plugin in `dir` (which must exist).
    pub fn open(dir: &Path) -> io::Result<Self> {
        Ok(Self {
            canonical: fs::canonicalize(dir)?,
        })
    }

    /// What `rel` (a path relative to the root, already checked with
    /// [`relative`] when it came from a file) resolves to, refusing a
    /// result outside the root.
    pub fn locate(&self, rel: &str) -> Result<Found, PathError> {
        self.resolve(&self.canonical.join(rel), rel)
    }

    /// What `path` (inside the root as found by a walk) resolves to,
    /// refusing a result outside the root; `shown` names it in messages.
    pub fn resolve(&self, path: &Path, shown: &str) -> Result<Found, PathError> {
        match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Missing),
            Err(error) => {
                return Err(PathError::Io {
                    path: path.to_owned(),
                    error,
                });
            }
            Ok(_) => {}
        }
        let resolved = match fs::canonicalize(path) {
            Ok(p) => p,
            // A dangling symlink.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Found::Other(path.to_owned()));
            }
            Err(error) => {
                return Err(PathError::Io {
                    path: path.to_owned(),
                    error,
                });
            }
        };
        if !resolved.starts_with(&self.canonical) {
            return Err(PathError::Escapes {
                path: shown.to_owned(),
                resolved,
                root: self.canonical.clone(),
            });
        }
        let meta = fs::metadata(&resolved).map_err(|error| PathError::Io {
            path: resolved.clone(),
            error,
        })?;
        Ok(if meta.is_file() {
            Found::File(resolved)
        } else if meta.is_dir() {
            Found::Dir(resolved)
        } else {
            Found::Other(resolved)
        })
    }
}

impl PathError {
    /// As a diagnostic of `kind` about `file` (escapes are always
    /// [`DiagnosticKind::PathEscape`]).
    pub fn diagnostic(&self, kind: DiagnosticKind, file: &Path) -> Diagnostic {
        let kind = match self {
            Self::Escapes { .. } | Self::NotRelative { .. } => DiagnosticKind::PathEscape,
            Self::Io { .. } => kind,
        };
        Diagnostic::new(Severity::Error, kind, file, None, self.to_string())
    }
}

/// Why a file could not be read as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadError {
    /// What is wrong.
    pub message: String,
    /// The line, when the problem is in the content.
    pub line: Option<usize>,
    /// The file is over the size bound.
    pub too_large: bool,
}

impl ReadError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            line: None,
            too_large: false,
        }
    }

    /// As a diagnostic about `path` (a size bound is [`DiagnosticKind::Bound`]).
    pub fn diagnostic(&self, kind: DiagnosticKind, path: &Path) -> Diagnostic {
        let kind = if self.too_large {
            DiagnosticKind::Bound
        } else {
            kind
        };
        Diagnostic::new(Severity::Error, kind, path, self.line, self.message.clone())
    }
}

/// Reads `path` as UTF-8 text of at most `limit` bytes: a regular file
/// only (a FIFO would block, `/dev/zero` would never end); a byte order
/// mark is dropped; the first invalid byte is located by line.
pub(crate) fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let meta = fs::metadata(path).map_err(|e| ReadError::new(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(ReadError::new("not a regular file"));
    }
    let too_large = |size: u64| ReadError {
        message: format!("{size} bytes, over the {limit}-byte bound; not read"),
        line: None,
        too_large: true,
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let file = fs::File::open(path).map_err(|e| ReadError::new(format!("cannot read: {e}")))?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::new(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_owned(),
            None => text,
        }),
        Err(e) => {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            Err(ReadError {
                message: "not valid UTF-8 text".into(),
                line: Some(valid.iter().filter(|&&b| b == b'\n').count() + 1),
                too_large: false,
            })
        }
    }
}

/// One file found by [`walk_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WalkedFile {
    /// The file (resolved).
    pub path: PathBuf,
    /// Its path below the walked folder, by segment, the extension dropped
    /// from the last one (`frontend/test.md` → `["frontend", "test"]`).
    pub segments: Vec<String>,
}

/// How a walk is bounded and confined.
pub(crate) struct Walk<'a> {
    /// Only names ending in this extension (`.md`, `.toml`).
    pub extension: &'a str,
    /// Deepest level (a file directly in the folder is level 1).
    pub max_depth: usize,
    /// Most files returned.
    pub max_files: usize,
    /// When set, entries resolving outside it are refused (a plugin's root).
    pub confine: Option<&'a Root>,
}

/// The files named `*<extension>` below `dir`, sorted by path, with
/// symlinks followed (each resolved folder visited once), hidden entries
/// skipped, and every bound hit or entry refused reported.
pub(crate) fn walk_files(dir: &Path, walk: &Walk<'_>) -> (Vec<WalkedFile>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    let mut visited = HashSet::new();
    let mut stack = vec![(dir.to_path_buf(), Vec::<String>::new())];
    let mut truncated = false;
    while let Some((folder, prefix)) = stack.pop() {
        if let Ok(real) = fs::canonicalize(&folder)
            && !visited.insert(real)
        {
            continue;
        }
        let mut entries: Vec<_> = match fs::read_dir(&folder) {
            Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).collect(),
            Err(e) => {
                diags.push(Diagnostic::error(
                    DiagnosticKind::CommandSkipped,
                    &folder,
                    format!("cannot read the folder: {e}"),
                ));
                continue;
            }
        };
        entries.sort();
        let mut subfolders = Vec::new();
        for entry in entries {
            let Some(name) = entry
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_owned)
            else {
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let found = match walk.confine {
                Some(root) => match root.resolve(&entry, &entry.display().to_string()) {
                    Ok(f) => f,
                    Err(e) => {
                        diags.push(e.diagnostic(DiagnosticKind::CommandSkipped, &entry));
                        continue;
                    }
                },
                None => match fs::metadata(&entry) {
                    Ok(m) if m.is_dir() => Found::Dir(entry.clone()),
                    Ok(m) if m.is_file() => Found::File(entry.clone()),
                    _ => Found::Other(entry.clone()),
                },
            };
            match found {
                Found::Dir(_) => {
                    if prefix.len() + 2 > walk.max_depth {
                        diags.push(Diagnostic::warning(
                            DiagnosticKind::Bound,
                            &entry,
                            format!("deeper than {} folder levels; not searched", walk.max_depth),
                        ));
                        continue;
                    }
                    let mut p = prefix.clone();
                    p.push(name);
                    subfolders.push((entry, p));
                }
                Found::File(resolved) => {
                    let Some(stem) = name.strip_suffix(walk.extension) else {
                        continue;
                    };
                    if stem.is_empty() {
                        continue;
                    }
                    if out.len() >= walk.max_files {
                        truncated = true;
                        break;
                    }
                    let mut segments = prefix.clone();
                    segments.push(stem.to_owned());
                    out.push(WalkedFile {
                        path: resolved,
                        segments,
                    });
                }
                Found::Missing | Found::Other(_) => {}
            }
        }
        if truncated {
            break;
        }
        // Depth first, in name order.
        stack.extend(subfolders.into_iter().rev());
    }
    if truncated {
        diags.push(Diagnostic::warning(
            DiagnosticKind::Bound,
            dir,
            format!(
                "more than {} command files; the rest are not read",
                walk.max_files
            ),
        ));
    }
    out.sort_by(|a, b| a.segments.cmp(&b.segments));
    (out, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_stay_inside() {
        assert_eq!(relative("./a/b").unwrap(), "a/b");
        assert_eq!(relative("a/../b").unwrap(), "a/../b");
        assert!(relative("../x").is_err());
        assert!(relative("./a/../../x").is_err());
        assert!(relative("/etc/passwd").is_err());
        assert!(relative("a\\b").is_err());
        assert!(relative("./").is_err());
    }

    #[test]
    fn reads_are_bounded_and_located() {
        let tmp = tempfile::tempdir().unwrap();
        let big = tmp.path().join("big");
        fs::write(&big, vec![b'a'; 100]).unwrap();
        let e = read_text(&big, 10).unwrap_err();
        assert!(e.too_large, "{e:?}");
        let bad = tmp.path().join("bad");
        fs::write(&bad, b"ok\nok\n\xff").unwrap();
        assert_eq!(read_text(&bad, 100).unwrap_err().line, Some(3));
        assert!(read_text(tmp.path(), 100).is_err());
    }
}
