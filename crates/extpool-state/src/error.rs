//! [`StateError`]: every way the state store can fail, each naming what is
//! at fault (the store by its masked URL, the session by its id).
//!
//! Nothing here ever holds a database password: store URLs are kept in
//! their masked form and driver messages pass through
//! [`extpool_config::secrets::mask_text`] before they are stored.

use crate::model::SessionId;

/// A failure of the state store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The store URL names no backend this build supports, or is malformed.
    #[error("state store {url}: {reason}")]
    BadUrl {
        /// The URL, masked.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The store could not be opened (file, connection, authentication).
    #[error("cannot open state store {url}: {detail}")]
    Open {
        /// The URL, masked.
        url: String,
        /// Why (driver message, masked).
        detail: String,
    },
    /// Another gateway serves this SQLite file ([`crate::OpenOptions::serve`]).
    #[error(
        "state store {url} is served by another extpool{}; an SQLite file serves one gateway: \
         to run several replicas, keep their state in PostgreSQL (a postgres:// URL)",
        holder.map(|pid| format!(" (process {pid})")).unwrap_or_default()
    )]
    InUse {
        /// The URL, masked.
        url: String,
        /// The process that serves it, if it could be read.
        holder: Option<u32>,
    },
    /// The store was migrated by a newer extpool than this one.
    #[error(
        "state store {url} has schema version {found}, newer than this extpool understands \
         (up to {supported}); run a newer extpool (a store is never migrated backwards)"
    )]
    SchemaTooNew {
        /// The URL, masked.
        url: String,
        /// The store's schema version.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A schema migration failed; the store is left at its previous version.
    #[error(
        "cannot migrate state store {url} to schema version {version} ({description}): {detail}"
    )]
    Migrate {
        /// The URL, masked.
        url: String,
        /// The migration that failed.
        version: i64,
        /// What that migration does.
        description: &'static str,
        /// Why (driver message, masked).
        detail: String,
    },
    /// No session has this id.
    #[error("session {session} does not exist")]
    NotFound {
        /// The id asked for.
        session: SessionId,
    },
    /// A session with this id exists already.
    #[error("session {session} already exists")]
    AlreadyExists {
        /// The id given.
        session: SessionId,
    },
    /// A session id is empty, too long or holds characters outside the allowed set.
    #[error("invalid session id {id:?}: {reason}")]
    InvalidId {
        /// The id (at most its first 64 characters).
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A replica id is empty, too long or holds characters outside the allowed set.
    #[error("invalid replica id {id:?}: {reason}")]
    InvalidReplicaId {
        /// The id (at most its first 64 characters).
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A session-era MCP session record cannot be accepted (its id or
    /// endpoint is malformed, or its `initialize` parameters too large).
    #[error("MCP session {id:?}: {reason}")]
    BadMcpSession {
        /// The MCP session id (at most its first 64 characters).
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// A take of rate tokens cannot be accepted (its owner or a rule key
    /// is empty or too long, a rule's numbers out of range, too many rules).
    #[error("rate limit of {owner:?}: {reason}")]
    BadRate {
        /// The owner (at most its first 64 characters).
        owner: String,
        /// What is wrong.
        reason: String,
    },
    /// What only a store shared by replicas (PostgreSQL) keeps was asked
    /// of one process's store (SQLite).
    #[error("{what} are shared by replicas on PostgreSQL only; this store is one process's")]
    NotShared {
        /// What was asked for.
        what: &'static str,
    },
    /// A session's owner (a principal) is empty or longer than
    /// [`crate::limits::MAX_OWNER_BYTES`].
    #[error("{}invalid owner {owner:?}: {reason}", session_prefix(session))]
    InvalidOwner {
        /// The session it was given for, if one.
        session: Option<SessionId>,
        /// The owner (at most its first 64 characters).
        owner: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A session's owner holds as many sessions as one owner may
    /// ([`crate::NewSession::max_owned`]); nothing was written.
    #[error(
        "{} holds {held} sessions, the most one caller may ({limit}); delete sessions it no longer needs",
        owner.as_deref().map_or_else(|| "the gateway's one caller".to_owned(), |o| format!("{o:?}"))
    )]
    TooManySessions {
        /// The owner (at most its first 64 characters); `None` for unowned
        /// sessions.
        owner: Option<String>,
        /// How many it holds.
        held: u64,
        /// The limit.
        limit: usize,
    },
    /// An API key name breaks the rule of names.
    #[error("invalid API key name {name:?}: {rule}")]
    InvalidApiKeyName {
        /// The name (at most its first 64 characters).
        name: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// An API key with this name exists already (revoke it first).
    #[error("API key {name:?} already exists")]
    ApiKeyExists {
        /// The name given.
        name: String,
    },
    /// The operating system gave no randomness for a new secret.
    #[error("cannot create API key {name:?}: no randomness from the operating system: {detail}")]
    NoRandomness {
        /// The API key being created.
        name: String,
        /// Why.
        detail: String,
    },
    /// A catalog name given for a grant is invalid.
    #[error("session {session}: invalid name {name:?}: {reason}")]
    InvalidName {
        /// The session.
        session: SessionId,
        /// The name (at most its first 64 characters).
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Granting would take a session past its limit of names.
    #[error(
        "session {session}: granting {adding} more names would hold {would_hold}, over the \
         limit of {limit} names per session; nothing was granted"
    )]
    TooManyNames {
        /// The session.
        session: SessionId,
        /// Names not yet granted that the operation would add.
        adding: usize,
        /// The size the authority would reach.
        would_hold: usize,
        /// The limit.
        limit: usize,
    },
    /// A session was given more per-session servers than allowed.
    #[error("session {session}: {count} per-session servers, over the limit of {limit}")]
    TooManyServers {
        /// The session.
        session: SessionId,
        /// How many were given.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// A per-session server's name is empty or too long.
    #[error("session {session}: invalid per-session server name {server:?}: {reason}")]
    InvalidServerName {
        /// The session.
        session: SessionId,
        /// The name (at most its first 64 characters).
        server: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A per-session server config is larger than allowed.
    #[error(
        "session {session}: per-session server {server:?} config is {bytes} bytes as JSON, \
         over the limit of {limit}"
    )]
    ConfigTooLarge {
        /// The session.
        session: SessionId,
        /// The server.
        server: String,
        /// Its size as stored.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A per-session server config had its `${VAR}` references resolved;
    /// the store keeps references, never secret values.
    #[error(
        "session {session}: per-session server {server:?} holds resolved secret values; \
         store its config with the ${{VAR}} references unresolved"
    )]
    ResolvedSecrets {
        /// The session.
        session: SessionId,
        /// The server.
        server: String,
    },
    /// A list cursor is not one this store returned.
    #[error("invalid session list cursor {cursor:?}")]
    InvalidCursor {
        /// The cursor (at most its first 64 characters).
        cursor: String,
    },
    /// A catalog revision number does not fit the store (above 2^63 - 1).
    #[error("session {session}: catalog revision {revision} is out of range")]
    RevisionOutOfRange {
        /// The session.
        session: SessionId,
        /// The revision.
        revision: u64,
    },
    /// A stored record cannot be read back.
    #[error("session {session}: stored {what} is unreadable: {detail}")]
    Corrupt {
        /// The session.
        session: SessionId,
        /// What record.
        what: String,
        /// Why.
        detail: String,
    },
    /// The database failed an operation.
    #[error("state store: {op}{}: {detail}", on_session(session))]
    Database {
        /// The operation (`"refresh"`, `"list sessions"`, …).
        op: &'static str,
        /// The session it concerned, if one.
        session: Option<SessionId>,
        /// The driver's message, masked.
        detail: String,
        /// True when retrying the same operation may succeed (busy, lost
        /// connection, serialization conflict).
        transient: bool,
    },
}

fn session_prefix(session: &Option<SessionId>) -> String {
    session
        .as_ref()
        .map(|s| format!("session {s}: "))
        .unwrap_or_default()
}

fn on_session(session: &Option<SessionId>) -> String {
    session
        .as_ref()
        .map(|s| format!(" of session {s}"))
        .unwrap_or_default()
}

impl StateError {
    /// True when the same operation may succeed if retried: the store was
    /// busy, the connection dropped or a concurrent transaction conflicted.
    /// Every write is idempotent or all-or-nothing, so retrying is safe.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StateError::Database {
                transient: true,
                ..
            }
        )
    }

    /// No session has id `session` (the one way every operation says so).
    pub fn not_found(session: &SessionId) -> StateError {
        StateError::NotFound {
            session: session.clone(),
        }
    }

    /// The session this error is about, if one.
    pub fn session(&self) -> Option<&SessionId> {
        match self {
            StateError::NotFound { session }
            | StateError::AlreadyExists { session }
            | StateError::InvalidName { session, .. }
            | StateError::TooManyNames { session, .. }
            | StateError::TooManyServers { session, .. }
            | StateError::InvalidServerName { session, .. }
            | StateError::ConfigTooLarge { session, .. }
            | StateError::ResolvedSecrets { session, .. }
            | StateError::RevisionOutOfRange { session, .. }
            | StateError::Corrupt { session, .. } => Some(session),
            StateError::Database { session, .. } | StateError::InvalidOwner { session, .. } => {
                session.as_ref()
            }
            _ => None,
        }
    }
}

/// At most the first 64 characters of `s`, for quoting outside input in an
/// error without copying an unbounded string.
pub(crate) fn quote_prefix(s: &str) -> String {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}… ({} bytes)", &s[..at], s.len()),
        None => s.to_owned(),
    }
}

/// A driver error as text with every secret masked.
pub(crate) fn masked_detail(err: &sqlx::Error) -> String {
    extpool_config::secrets::mask_text(&err.to_string())
}

/// True for driver errors worth retrying: a conflict, a dropped
/// connection or a pool timeout.
pub(crate) fn is_transient(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut) || is_conflict(err)
}

/// True for a conflict that rolled its transaction back whole: SQLite
/// BUSY or LOCKED (with their extended codes), PostgreSQL
/// `serialization_failure` or `deadlock_detected`.
pub(crate) fn is_conflict(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            Some("5" | "6" | "261" | "262" | "517" | "773" | "40001" | "40P01")
        ),
        _ => false,
    }
}

/// Builds a [`StateError::Database`] for `op` on `session`.
pub(crate) fn db_error(
    op: &'static str,
    session: Option<&SessionId>,
    err: &sqlx::Error,
) -> StateError {
    StateError::Database {
        op,
        session: session.cloned(),
        detail: masked_detail(err),
        transient: is_transient(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_a_bounded_prefix() {
        assert_eq!(quote_prefix("short"), "short");
        let long = "é".repeat(100);
        let q = quote_prefix(&long);
        assert!(q.starts_with(&"é".repeat(64)));
        assert!(q.ends_with("… (200 bytes)"), "{q}");
    }

    #[test]
    fn database_errors_name_the_session_once() {
        let id = SessionId::new("s-1").expect("id");
        let e = StateError::Database {
            op: "refresh",
            session: Some(id),
            detail: "boom".into(),
            transient: true,
        };
        assert_eq!(e.to_string(), "state store: refresh of session s-1: boom");
        assert!(e.is_transient());
        let e = StateError::Database {
            op: "list sessions",
            session: None,
            detail: "boom".into(),
            transient: false,
        };
        assert_eq!(e.to_string(), "state store: list sessions: boom");
        assert!(!e.is_transient());
    }
}
