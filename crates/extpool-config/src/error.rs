//! The errors of loading a configuration.

use crate::diagnostics::Diagnostic;
use crate::expand::FieldExpandError;
use crate::tree::Pos;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {file}: {error}")]
    Read {
        /// The file as shown to the user.
        file: String,
        /// The I/O error (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
    /// The path is not a regular file (a FIFO, a device, a directory…):
    /// reading it could block forever or never end.
    #[error(
        "cannot read {file}: it is {kind}, not a regular file; configuration is read only from regular files"
    )]
    NotRegular {
        /// The file as shown to the user.
        file: String,
        /// What it is instead ("a FIFO", "a character device", …).
        kind: &'static str,
    },
    /// The file is larger than the limit.
    #[error(
        "cannot read {file}: it is larger than {limit} bytes (the limit; set EXTPOOL_MAX_CONFIG_BYTES to change it)"
    )]
    TooLarge {
        /// The file as shown to the user.
        file: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The file is not valid UTF-8.
    #[error(
        "{file}:{pos}: invalid UTF-8 (byte {offset} of the file); configuration files must be UTF-8 text"
    )]
    InvalidUtf8 {
        /// The file as shown to the user.
        file: String,
        /// Line and column of the first invalid byte.
        pos: Pos,
        /// Its byte offset.
        offset: usize,
    },
    /// The file's kind could not be told from its name.
    #[error(
        "{file}: unknown configuration format; expected extpool.yaml (.yaml/.yml), a JSON MCP config (.mcp.json, mcp.json, claude_desktop_config.json) or Codex's config.toml"
    )]
    UnknownFormat {
        /// The file as shown to the user.
        file: String,
    },
    /// Syntax or schema errors, each with file, line and column.
    #[error("{}", render(.diagnostics))]
    Invalid {
        /// Every error found (warnings may be included for context).
        diagnostics: Vec<Diagnostic>,
    },
}

impl ConfigError {
    /// The diagnostics of an [`ConfigError::Invalid`] error (empty otherwise).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Self::Invalid { diagnostics } => diagnostics,
            _ => &[],
        }
    }

    /// The file that could not be read, if that is the error.
    pub fn unreadable_file(&self) -> Option<&str> {
        match self {
            Self::Read { file, .. }
            | Self::NotRegular { file, .. }
            | Self::TooLarge { file, .. }
            | Self::InvalidUtf8 { file, .. } => Some(file),
            _ => None,
        }
    }

    /// Where in the file the error is, when it is about one place.
    pub fn pos(&self) -> Option<Pos> {
        match self {
            Self::InvalidUtf8 { pos, .. } => Some(*pos),
            _ => None,
        }
    }
}

fn render(diagnostics: &[Diagnostic]) -> String {
    let errors: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.to_string())
        .collect();
    errors.join("\n")
}

/// A server whose config cannot be turned into a runnable one (an unset
/// variable, a malformed `${`). It names the file and position of the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{pos}: mcp_servers.{server}.{error}")]
pub struct ResolveError {
    /// The server.
    pub server: String,
    /// The file it is defined in (as shown to the user).
    pub file: String,
    /// Where its entry is.
    pub pos: Pos,
    /// The field that failed and why (shown in the message, so not a
    /// `source()`).
    pub error: FieldExpandError,
}
