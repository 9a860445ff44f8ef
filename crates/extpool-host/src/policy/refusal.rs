//! [`Refusal`]: why a name a table knows may not be called here — the
//! fact, for the model, with the name at fault. Front ends add their own
//! words (the gateway says how a refresh grants names).

/// Why a known name is not callable in a view.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The permission rules deny it.
    #[error("tool {name:?} is denied by {rule}")]
    Denied {
        /// The catalog name.
        name: String,
        /// The rule (or default policy) that denied it.
        rule: String,
    },
    /// The session was not granted it (it became active after the session
    /// last refreshed).
    #[error("{name} is not granted to this session")]
    NotGranted {
        /// The catalog name.
        name: String,
    },
    /// Another server lists it under the name of one of this session's own
    /// servers, which does not.
    #[error(
        "{name} is not this session's server {server}'s: another server lists it under that name"
    )]
    Shadowed {
        /// The catalog name.
        name: String,
        /// The session's own server whose name it takes.
        server: String,
    },
    /// The embedding program's filter leaves it out of this scope.
    #[error("unknown tool {name}: it is not offered to this agent")]
    Filtered {
        /// The catalog name.
        name: String,
    },
    /// A `permissions.principals` rule for callers like this one refuses
    /// it (the gateway's rules allow it to others).
    #[error("tool {name:?} is not available to this caller: {rule}")]
    DeniedForPrincipal {
        /// The catalog name.
        name: String,
        /// The rule, and which callers it is for.
        rule: String,
    },
    /// A `permissions.principals` rule for callers like this one refuses
    /// this MCP prompt.
    #[error("prompt {name:?} is not available to this caller: {rule}")]
    PromptDeniedForPrincipal {
        /// The prompt's catalog name.
        name: String,
        /// The rule, and which callers it is for.
        rule: String,
    },
    /// Its server is down; its tools return when it recovers.
    #[error("{name} is unavailable: {reason}; its tools return when it recovers")]
    Degraded {
        /// The catalog name.
        name: String,
        /// Why its server is marked down.
        reason: String,
    },
}

impl Refusal {
    /// The catalog name refused (a tool's, or a prompt's).
    pub fn name(&self) -> &str {
        match self {
            Self::Denied { name, .. }
            | Self::DeniedForPrincipal { name, .. }
            | Self::PromptDeniedForPrincipal { name, .. }
            | Self::NotGranted { name }
            | Self::Shadowed { name, .. }
            | Self::Filtered { name }
            | Self::Degraded { name, .. } => name,
        }
    }

    /// True when the session's grants refused it (a refresh may grant it).
    pub fn is_not_granted(&self) -> bool {
        matches!(self, Self::NotGranted { .. })
    }
}
