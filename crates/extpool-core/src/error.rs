//! The error every resource-protocol method returns, and the rule for
//! showing an error to people.
//!
//! Capabilities wrap their own typed errors in [`ExtensionError::Source`] so
//! callers can still downcast them; nobody should match on message strings.
//!
//! **Each cause is shown once.** A wrapper either includes its cause's text
//! in its own message or returns the cause from `source()`, never both;
//! extpool's wrappers include the text (so `to_string()` and `{:#}` agree),
//! and [`Causes`] renders any foreign error chain with each cause once.

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
    ///
    /// Shown as the layer error's own text (with its causes, each once): a
    /// layer error names what it is about (an MCP server, a skill file).
    #[error("{}", Causes(error.as_ref()))]
    Source {
        /// Capability whose layer failed.
        capability: String,
        /// The underlying error; downcast it to inspect.
        error: BoxError,
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
            error: source.into(),
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
            Self::Source { error, .. } => error.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// The wrapped source error, mutably, if it is of type `E`: for a host
    /// that rewrites what an outside party wrote in it before it reaches a
    /// model (a guardrail's redaction).
    pub fn downcast_source_mut<E: std::error::Error + 'static>(&mut self) -> Option<&mut E> {
        match self {
            Self::Source { error, .. } => error.downcast_mut::<E>(),
            _ => None,
        }
    }
}

/// Shows an error and the causes in its `source()` chain, outermost first,
/// each once: a cause whose text the message before it already ends with
/// (a wrapper that printed it *and* returned it) is not repeated.
pub struct Causes<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Causes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut previous = self.0.to_string();
        f.write_str(&previous)?;
        let mut next = self.0.source();
        while let Some(cause) = next {
            let text = cause.to_string();
            if !text.is_empty() && !previous.ends_with(&text) {
                write!(f, ": {text}")?;
            }
            previous = text;
            next = cause.source();
        }
        Ok(())
    }
}

impl std::fmt::Debug for Causes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer: {inner}")]
    struct Both {
        #[source]
        inner: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("reading config")]
    struct Chained {
        #[source]
        inner: std::io::Error,
    }

    #[test]
    fn each_cause_is_shown_once() {
        let io = || std::io::Error::other("Is a directory (os error 21)");
        let both = Both { inner: io() };
        assert_eq!(
            Causes(&both).to_string(),
            "outer: Is a directory (os error 21)"
        );
        let chained = Chained { inner: io() };
        assert_eq!(
            Causes(&chained).to_string(),
            "reading config: Is a directory (os error 21)"
        );
    }

    #[test]
    fn a_wrapped_layer_error_is_shown_once_in_every_rendering() {
        let e = ExtensionError::source(
            "gh",
            Both {
                inner: std::io::Error::other("gone"),
            },
        );
        assert_eq!(e.to_string(), "outer: gone");
        // What a binary prints with anyhow's `{:#}`: the same, once.
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(Causes(&e).to_string(), "outer: gone");
        assert!(e.downcast_source::<Both>().is_some());
    }
}
