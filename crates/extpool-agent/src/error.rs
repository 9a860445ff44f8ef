//! [`AgentError`]: what an agent runtime's call into extpool could not do.
//!
//! Failures the *model* should read — an unknown or denied tool, a server
//! that is down, bad arguments — are not errors here: a call returns them as
//! a tool-error [`extpool_host::ToolResult`] so the model can react. These
//! are the failures the *program* must handle.

use extpool_host::HostError;

/// Why an agent operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The host refused (shut down, a closed view, a bad capability).
    #[error(transparent)]
    Host(#[from] HostError),
    /// The run was interrupted: the call in flight was cancelled (its
    /// server was told) and nothing of it was recorded.
    #[error("the run of {scope} was interrupted")]
    Interrupted {
        /// The agent (and turn) whose run it was.
        scope: String,
    },
    /// Another agent of this name is open in the session.
    #[error(
        "an agent named {name:?} is already open in session {session:?}; complete it first or choose another name"
    )]
    AgentOpen {
        /// The agent name.
        name: String,
        /// The session.
        session: String,
    },
    /// The turn has ended; open a new one.
    #[error("turn {turn:?} of agent {agent:?} has ended")]
    TurnEnded {
        /// The agent.
        agent: String,
        /// The turn.
        turn: String,
    },
    /// A view at the wrong level, or an invalid name.
    #[error("{0}")]
    Scope(String),
}

impl AgentError {
    /// True when the run was interrupted.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Self::Interrupted { .. })
    }
}
