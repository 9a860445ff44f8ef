//! Errors of operations on one skill (reading its body). Problems found while
//! loading many skills are [`crate::Diagnostic`]s instead, never errors.

use std::path::PathBuf;

/// A failure to read a skill's SKILL.md.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be read within the skill's confinement.
    #[error("{}: {source}", path.display())]
    File {
        /// The SKILL.md.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::files::FileError,
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
