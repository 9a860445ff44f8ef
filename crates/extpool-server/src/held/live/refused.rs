//! Why the session table refuses a session or a request ([`Full`],
//! [`Refused`]), and what a client is told when every slot is taken.

use std::time::Duration;

/// Why a session could not be given a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Full {
    /// The limit.
    pub max: usize,
    /// When the longest-idle session (of the caller, when `own`) expires,
    /// if any is idle.
    pub frees_in: Option<Duration>,
    /// The idle timeout.
    pub idle: Duration,
    /// Whether the caller holds as many as one caller may
    /// (`--sessions-per-principal`); else the gateway is full
    /// (`--max-sessions`).
    pub own: bool,
}

impl Full {
    /// The message a refused client reads.
    pub(crate) fn message(&self) -> String {
        let when = match self.frees_in {
            Some(d) => format!(
                "the longest-idle one expires in {} s (--session-idle-timeout {}); retry then",
                d.as_secs().max(1),
                self.idle.as_secs()
            ),
            None => format!(
                "every one has a request or stream open; a session expires {} s after its last request ends (--session-idle-timeout)",
                self.idle.as_secs()
            ),
        };
        if self.own {
            return format!(
                "you hold {} MCP sessions on this extpool gateway, the most one caller may (gateway.limits.sessions_per_principal, extpool serve --sessions-per-principal): end one you no longer use (HTTP DELETE with its Mcp-Session-Id), or {when}",
                self.max
            );
        }
        format!(
            "this extpool gateway holds at most {} MCP sessions at once (extpool serve --max-sessions) and all are taken: {when}",
            self.max
        )
    }

    /// The HTTP status of the refusal: 429 when the caller holds its most
    /// (it may end one of its own), 503 when the gateway is full.
    pub(crate) fn status(&self) -> u16 {
        if self.own { 429 } else { 503 }
    }

    /// Seconds for a `Retry-After` header.
    pub(crate) fn retry_after(&self) -> u64 {
        self.frees_in
            .map_or(self.idle.as_secs(), |d| d.as_secs())
            .max(1)
    }
}

/// Why a request was not admitted to its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its id is already in flight on the session.
    DuplicateId,
    /// The session has [`MAX_REQUESTS_IN_FLIGHT`](super::MAX_REQUESTS_IN_FLIGHT) requests open.
    TooMany,
    /// The session is not held here (unknown, or made elsewhere).
    NotHeld,
    /// The session is not held here and every slot is taken.
    Full(Full),
}
