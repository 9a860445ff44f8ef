//! The error every resource-protocol method returns.
//!
//! Capabilities wrap their own typed errors in [`ExtensionError::Source`] so
//! callers can still downcast them; nobody should match on message strings.

/// A boxed error that can cross task boundaries.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Failure of a resource-protocol call on one capability.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// The named tool, skill, resource or command does not exist here.
    #[error("{kind} not found: {name}")]
    NotFound {
        /// What was looked up: "tool", "skill", "resource", "command", …
        kind: &'static str,
        /// The name or URI that was not found.
        name: String,
    },
    /// The caller passed arguments this capability cannot accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The operation was refused by policy (permissions, confinement).
    #[error("denied: {0}")]
    Denied(String),
    /// The operation did not finish in time.
    #[error("{capability}: {operation} timed out after {timeout_ms} ms")]
    Timeout {
        /// Capability that timed out.
        capability: String,
        /// What it was doing.
        operation: String,
        /// The limit that was exceeded.
        timeout_ms: u64,
    },
    /// The capability cannot serve requests right now.
    #[error("{capability} unavailable: {reason}")]
    Unavailable {
        /// Capability that is unavailable.
        capability: String,
        /// Why, in words for people.
        reason: String,
    },
    /// A typed error from the capability's own layer (MCP client, skills, …).
    #[error("{capability}: {source}")]
    Source {
        /// Capability whose layer failed.
        capability: String,
        /// The underlying error; downcast it to inspect.
        #[source]
        source: BoxError,
    },
}

impl ExtensionError {
    /// Shorthand for [`ExtensionError::NotFound`].
    pub fn not_found(kind: &'static str, name: impl Into<String>) -> Self {
        Self::NotFound {
            kind,
            name: name.into(),
        }
    }

    /// Wraps a typed error from a capability's layer.
    pub fn source(capability: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Source {
            capability: capability.into(),
            source: source.into(),
        }
    }

    /// True when the thing asked for does not exist (as opposed to a failure).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// True when the operation timed out.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// The wrapped source error, if it is of type `E`.
    pub fn downcast_source<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            Self::Source { source, .. } => source.downcast_ref::<E>(),
            _ => None,
        }
    }
}
