//! Editing configuration files in place: a server added to or removed
//! from `extpool.yaml` ([`yaml`]), a permission rule added to or removed
//! from its `permissions` lists ([`permissions`]), an entry written to or removed from an
//! agent's own config file ([`jsonc`], [`toml`], the agents in
//! [`agents`]).
//!
//! Every edit is located: it changes the lines (or the JSON/TOML entry)
//! it is about and leaves every other byte of the file as it was —
//! comments, blank lines, key order, quoting. An edit that would change
//! nothing says so ([`Edited::changed`]), so running a command twice
//! writes once. Files are replaced atomically ([`write_atomic`]): a reader
//! (a gateway watching the file, the agent itself) sees the old text or
//! the new, never half of one.

pub mod agents;
pub mod jsonc;
mod outline;
pub mod permissions;
pub mod toml;
pub mod yaml;

use std::path::Path;

/// The outcome of an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The file's new text.
    pub text: String,
    /// Whether it differs from the old one.
    pub changed: bool,
}

impl Edited {
    /// The outcome of turning `old` into `new`.
    pub fn between(old: &str, new: String) -> Self {
        Self {
            changed: new != old,
            text: new,
        }
    }
}

/// Why a file could not be edited.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The file does not parse.
    #[error("line {line}: {message}")]
    Syntax {
        /// Where the parser stopped (1-based).
        line: usize,
        /// What it found.
        message: String,
    },
    /// A part that must be a mapping (an object) is something else.
    #[error("line {line}: {what} is not a mapping")]
    NotAMapping {
        /// What it is ("the document", "mcp_servers").
        what: String,
        /// Where it is.
        line: usize,
    },
    /// A part is written in a way a located edit cannot keep.
    #[error("line {line}: {why}; edit this file by hand")]
    NotEditable {
        /// Where it is.
        line: usize,
        /// What is in the way.
        why: String,
    },
    /// A server of that name (ignoring case) is there already.
    #[error("a server named {existing:?} is already defined (line {line})")]
    Exists {
        /// The name asked for.
        name: String,
        /// The name as written in the file.
        existing: String,
        /// Where it is.
        line: usize,
    },
    /// No server of that name is there.
    #[error("no server named {name:?} is defined in this file")]
    NotFound {
        /// The name asked for.
        name: String,
    },
    /// The value could not be written in the file's format.
    #[error("cannot write the entry: {0}")]
    Render(String),
}

impl EditError {
    pub(crate) fn syntax(line: usize, message: impl Into<String>) -> Self {
        Self::Syntax {
            line,
            message: message.into(),
        }
    }

    pub(crate) fn render(e: impl std::fmt::Display) -> Self {
        Self::Render(e.to_string())
    }
}

/// Writes `text` to `path` atomically: into a new file beside it (with the
/// old file's permissions, or 0600 for a new one: agents' files may hold
/// credentials), then renamed over it. Missing parent directories are
/// made.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.extpool-{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        match std::fs::metadata(path) {
            Ok(meta) => file.set_permissions(meta.permissions())?,
            Err(_) => private(&file)?,
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(unix)]
fn private(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn private(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_keep_the_mode_and_make_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.json");
        write_atomic(&path, "{}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            write_atomic(&path, "{\"a\": 1}").unwrap();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644);
        }
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
