//! Why a session operation failed, and the HTTP status each answers with.

use extpool_state::StateError;

/// Why a session operation failed. Messages are for the client: they name
/// what to change, never a secret or an internal detail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The store refused or failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// A per-session server that cannot be accepted.
    #[error("per-session server {name:?}: {reason}")]
    BadServer {
        /// Its name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Per-session servers are not accepted by this deployment.
    #[error(
        "this gateway does not accept per-session MCP servers (it does not advertise mcp_servers_on_create)"
    )]
    ServersNotAccepted,
    /// More per-session servers asked for than the gateway ever holds.
    #[error(
        "{asked} per-session MCP servers asked for; this gateway holds at most {max} at once, across sessions"
    )]
    TooManyAsked {
        /// How many the request names.
        asked: usize,
        /// The limit.
        max: usize,
    },
    /// Too many per-session servers open.
    #[error(
        "{asked} more per-session MCP servers would make {} open, past this gateway's {max} ({open} are open now); close sessions you no longer need (CloseSession on a session's endpoint, or DELETE /v1/sessions/{{id}})", open + asked
    )]
    TooManyServers {
        /// Open now.
        open: usize,
        /// How many more were asked for.
        asked: usize,
        /// The limit.
        max: usize,
    },
    /// The caller already has a session of this id (as it wrote it).
    #[error("session {id:?} already exists; choose another id, or leave it out to have one made")]
    Exists {
        /// The id, as the caller wrote it.
        id: String,
    },
    /// The caller holds as many durable sessions as one caller may.
    #[error(
        "you hold {held} durable sessions on this extpool gateway, the most one caller may (gateway.limits.sessions_per_principal, extpool serve --sessions-per-principal {max}): delete sessions you no longer need (DELETE /v1/sessions/{{id}}, or CloseSession on a session's endpoint)"
    )]
    TooManySessions {
        /// How many it holds.
        held: u64,
        /// The limit.
        max: usize,
    },
    /// An id no caller may choose: shaped like a whole id, or too long
    /// to take its owner's digest (see the module `sessions::ids`).
    #[error("session id {id:?}: {reason}")]
    ReservedId {
        /// The id, as the caller wrote it (shortened when long).
        id: String,
        /// Why, and what to choose instead.
        reason: String,
    },
    /// The host refused to open the session's view (shown in the message,
    /// so not a `source()`).
    #[error("cannot open the session: {0}")]
    Host(extpool_host::HostError),
}

impl From<extpool_host::HostError> for SessionError {
    fn from(error: extpool_host::HostError) -> Self {
        Self::Host(error)
    }
}

impl SessionError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> u16 {
        match self {
            SessionError::State(StateError::NotFound { .. }) => 404,
            SessionError::State(StateError::AlreadyExists { .. }) | SessionError::Exists { .. } => {
                409
            }
            SessionError::State(
                StateError::InvalidId { .. }
                | StateError::InvalidName { .. }
                | StateError::TooManyNames { .. }
                | StateError::TooManyServers { .. }
                | StateError::InvalidServerName { .. }
                | StateError::ConfigTooLarge { .. }
                | StateError::InvalidCursor { .. }
                | StateError::ResolvedSecrets { .. },
            ) => 400,
            SessionError::BadServer { .. }
            | SessionError::ReservedId { .. }
            | SessionError::ServersNotAccepted
            | SessionError::TooManyAsked { .. } => 400,
            SessionError::TooManyServers { .. } | SessionError::TooManySessions { .. } => 429,
            _ => 500,
        }
    }
}
