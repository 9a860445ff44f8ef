//! The SQL both backends share, and the few statements where they differ.
//!
//! Every statement uses `$N` parameters, which SQLite and PostgreSQL both
//! understand, and types both accept (`BIGINT`, `TEXT`, `BOOLEAN`). What
//! differs is how a writer excludes other writers: SQLite takes the
//! database's write lock at `BEGIN IMMEDIATE`; PostgreSQL locks the one
//! session row (`FOR UPDATE`), so writers of different sessions never wait
//! on each other.

/// How one backend opens transactions and locks.
pub(crate) struct Dialect {
    /// Starts a transaction that will write.
    pub begin_write: &'static str,
    /// Starts a read-only transaction with one snapshot for every statement.
    pub begin_read: &'static str,
    /// Reads a session's status, locking the session against other writers
    /// until the transaction ends.
    pub lock_session: &'static str,
    /// Serializes schema migrations across processes (after `begin_write`).
    pub lock_migrations: Option<&'static str>,
    /// Serializes the creates of one owner's sessions across processes
    /// (after `begin_write`; `$1`: the owner, `""` for unowned), so a
    /// count of its sessions holds until the create commits; `None` where
    /// the write transaction is exclusive already (SQLite).
    pub lock_owner: Option<&'static str>,
    /// Tells every other replica, when the transaction commits, what
    /// changed (`$1`: the event's payload); `None` where no other process
    /// listens (SQLite).
    pub notify: Option<&'static str>,
}

/// SQLite: the write lock is database-wide and taken at `BEGIN IMMEDIATE`
/// (waiting up to the busy timeout), so a read-then-write transaction can
/// never fail to upgrade.
pub(crate) const SQLITE: Dialect = Dialect {
    begin_write: "BEGIN IMMEDIATE",
    begin_read: "BEGIN",
    lock_session: "SELECT status FROM sessions WHERE id = $1",
    lock_migrations: None,
    lock_owner: None,
    notify: None,
};

/// PostgreSQL: row locks for sessions, a transaction-scoped advisory lock
/// for migrations (released at commit or rollback, even if the process dies).
pub(crate) const POSTGRES: Dialect = Dialect {
    begin_write: "BEGIN",
    begin_read: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    lock_session: "SELECT status FROM sessions WHERE id = $1 FOR UPDATE",
    lock_migrations: Some("SELECT pg_advisory_xact_lock(7310011615834633268)"),
    lock_owner: Some("SELECT pg_advisory_xact_lock(1702390117, hashtext($1))"),
    notify: Some("SELECT pg_notify('extpool_sessions', $1)"),
};

/// The PostgreSQL channel store events travel on between replicas.
pub(crate) const EVENTS_CHANNEL: &str = "extpool_sessions";

/// The table that records applied schema versions.
pub(crate) const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS extpool_schema (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at_ms BIGINT NOT NULL
)";

/// Schema version 1: sessions, their per-session servers, their grants.
pub(crate) const V1: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    created_at_ms BIGINT NOT NULL,
    last_seen_ms BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'idle', 'completed')),
    auto_grant BOOLEAN NOT NULL,
    revision BIGINT NOT NULL,
    refreshed_at_ms BIGINT
);
CREATE INDEX sessions_by_creation ON sessions (created_at_ms, id);
CREATE TABLE session_servers (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    config TEXT NOT NULL,
    PRIMARY KEY (session_id, name)
);
CREATE TABLE session_grants (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    revision BIGINT NOT NULL,
    granted_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, name)
);
";

/// Schema version 2, for replicas sharing one store: which replica's
/// catalog numbered a session's pinned revision; the replicas alive (by
/// heartbeat) and the sessions each holds open (its connections to their
/// per-session servers); session-era MCP sessions any replica can resume.
pub(crate) const V2: &str = "
ALTER TABLE sessions ADD COLUMN revision_by TEXT;
CREATE TABLE replicas (
    id TEXT PRIMARY KEY,
    started_at_ms BIGINT NOT NULL,
    heartbeat_ms BIGINT NOT NULL
);
CREATE TABLE session_holders (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    replica_id TEXT NOT NULL REFERENCES replicas (id) ON DELETE CASCADE,
    opened_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, replica_id)
);
CREATE INDEX session_holders_by_replica ON session_holders (replica_id);
CREATE TABLE mcp_sessions (
    id TEXT PRIMARY KEY,
    endpoint TEXT NOT NULL,
    init TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    seen_ms BIGINT NOT NULL
);
CREATE INDEX mcp_sessions_by_endpoint ON mcp_sessions (endpoint);
CREATE INDEX mcp_sessions_by_seen ON mcp_sessions (seen_ms);
";

/// Schema version 3, for identities: the owner (principal, an opaque
/// string; `NULL` when unowned) of each session, with an index to list one
/// owner's sessions in creation order, and of each resumable MCP session;
/// static API keys, kept by the SHA-256 digest of their secret (never the
/// secret itself).
pub(crate) const V3: &str = "
ALTER TABLE sessions ADD COLUMN owner TEXT;
CREATE INDEX sessions_by_owner ON sessions (owner, created_at_ms, id);
ALTER TABLE mcp_sessions ADD COLUMN owner TEXT;
CREATE TABLE api_keys (
    name TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    operator BOOLEAN NOT NULL,
    created_at_ms BIGINT NOT NULL,
    last_used_ms BIGINT
);
";

/// Schema version 4, for limits that hold across replicas: each caller's
/// token bucket per rate rule (`burst`, tokens gained a millisecond, the
/// tokens left at `at_ms` by the database's clock, whether the last take
/// got one, and when the bucket is full again: expired after that).
/// Written on PostgreSQL only; SQLite's gateway keeps its buckets in memory.
pub(crate) const V4: &str = "
CREATE TABLE rate_buckets (
    owner TEXT NOT NULL,
    rule TEXT NOT NULL,
    burst DOUBLE PRECISION NOT NULL,
    per_ms DOUBLE PRECISION NOT NULL,
    tokens DOUBLE PRECISION NOT NULL,
    at_ms BIGINT NOT NULL,
    full_ms BIGINT NOT NULL,
    took BOOLEAN NOT NULL,
    PRIMARY KEY (owner, rule)
);
CREATE INDEX rate_buckets_by_full ON rate_buckets (full_ms);
";

/// The columns of a [`crate::SessionSummary`], from `sessions s`.
pub(crate) const SUMMARY_COLUMNS: &str = "s.id, s.created_at_ms, s.last_seen_ms, s.status, \
    s.auto_grant, s.revision, s.revision_by, s.refreshed_at_ms, s.owner, \
    (SELECT COUNT(*) FROM session_grants g WHERE g.session_id = s.id) AS granted_count, \
    (SELECT COUNT(*) FROM session_servers v WHERE v.session_id = s.id) AS server_count";

/// How many names one `INSERT` grants at most (keeps every statement far
/// below both backends' parameter limits).
pub(crate) const GRANT_CHUNK: usize = 200;

/// `INSERT` of `n` grants: `$1` session, `$2` revision, `$3` time, then
/// one name parameter per row from `$4`.
pub(crate) fn insert_grants(n: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO session_grants (session_id, name, revision, granted_at_ms) VALUES ",
    );
    for i in 0..n {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!("($1, ${}, $2, $3)", i + 4));
    }
    sql.push_str(" ON CONFLICT DO NOTHING");
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_insert_numbers_its_parameters() {
        assert_eq!(
            insert_grants(2),
            "INSERT INTO session_grants (session_id, name, revision, granted_at_ms) VALUES \
             ($1, $4, $2, $3), ($1, $5, $2, $3) ON CONFLICT DO NOTHING"
        );
    }
}
