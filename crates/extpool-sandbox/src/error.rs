//! What goes wrong when a server is confined.

use crate::support::Refusal;

/// Why a confined server could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// This kernel cannot enforce the profile.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A path the profile (or the server's command or working directory)
    /// names cannot be granted.
    #[error("cannot grant {access} access to {path}: {reason}")]
    Path {
        /// The path.
        path: String,
        /// `read` or `write`.
        access: &'static str,
        /// Why not (it does not exist, …).
        reason: String,
    },
    /// Building the Landlock ruleset failed.
    #[error("building the Landlock rules failed: {0}")]
    Landlock(String),
    /// Preparing the confinement failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A step in the child, before the server's program ran, failed.
    #[error("confining the server failed while {step}: {source}")]
    Step {
        /// The step, described.
        step: &'static str,
        /// The errno it failed with.
        #[source]
        source: std::io::Error,
    },
}

impl SandboxError {
    /// True when the kernel cannot enforce the profile (nothing was started).
    pub fn is_refusal(&self) -> bool {
        matches!(self, SandboxError::Refused(_))
    }
}
