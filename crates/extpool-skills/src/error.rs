//! Errors of operations on one skill (reading its body). Problems found while
//! loading many skills are [`crate::Diagnostic`]s instead, never errors.

use std::path::PathBuf;

/// A failure to read a skill's SKILL.md.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The file could not be read.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
    /// The file could not be read within the skill's confinement.
    #[error("{}: {error}", path.display())]
    File {
        /// The SKILL.md.
        path: PathBuf,
        /// Why (shown in the message, so not a `source()`).
        error: crate::files::FileError,
    },
    /// The file is not valid UTF-8.
    #[error("{}:{line}: SKILL.md is not valid UTF-8", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// First line with an invalid byte sequence.
        line: usize,
    },
}
