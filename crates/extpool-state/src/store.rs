//! [`StateStore`]: one handle on the durable state, whichever backend
//! holds it. Opening migrates the schema; the session and authority
//! operations live in `sessions` and `authority`.

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection, PgConnection, Row, SqliteConnection};

use crate::error::{StateError, db_error, is_conflict, masked_detail};
use crate::events::{Bus, StoreEvent};
use crate::limits::Limits;
use crate::location::{Backend, StoreUrl};
use crate::migrate;
use crate::model::{ReplicaId, SessionId, SessionStatus, SessionSummary};

/// How a store is opened.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Bounds on what a session may hold.
    pub limits: Limits,
    /// Most open database connections (default 8).
    pub max_connections: u32,
    /// Longest wait for a free connection (default 10 s).
    pub acquire_timeout: Duration,
    /// Longest wait for SQLite's write lock held by another process or
    /// connection (default 10 s).
    pub busy_timeout: Duration,
    /// This handle serves a gateway: on SQLite, refused when another
    /// process serves the same file (an SQLite file serves one gateway;
    /// replicas share PostgreSQL), and keeping others from serving it while
    /// the handle (or a clone) lives. Default `false`: a command that only
    /// reads or writes the store opens it beside a gateway.
    pub serve: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            limits: Limits::default(),
            max_connections: 8,
            acquire_timeout: Duration::from_secs(10),
            busy_timeout: Duration::from_secs(10),
            serve: false,
        }
    }
}

/// The first connection of an open, the one that migrates. On a new
/// SQLite file it turns the file to WAL, which takes a lock SQLite's busy
/// timeout does not wait for: when another process opens the same new
/// file at once, it is answered busy. So a busy answer is tried again, as
/// SQLite's busy handler would (pauses growing to 50 ms), until `patience`.
async fn first_connection<O>(connect: &O, patience: Duration) -> Result<O::Connection, sqlx::Error>
where
    O: ConnectOptions,
    O::Connection: Sized,
{
    let deadline = tokio::time::Instant::now() + patience;
    let mut pause = Duration::from_millis(1);
    loop {
        match connect.connect().await {
            Err(e) if is_conflict(&e) && tokio::time::Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            connected => return connected,
        }
    }
}

/// SQLite's pool. A connection goes back to it only outside a
/// transaction: SQLite may roll a transaction back by itself when a
/// statement fails (a full disk, an I/O error: "the transaction may or may
/// not be rolled back automatically"), and then the driver's rollback of
/// the dropped transaction fails and it still counts the transaction open,
/// refusing every later `BEGIN` on that connection ("begin_with at non-zero
/// transaction depth") until the process restarts. Such a connection is
/// closed instead; the pool opens a fresh one, and the store serves again
/// as soon as the disk does.
fn sqlite_pool() -> SqlitePoolOptions {
    SqlitePoolOptions::new().after_release(|conn, _| {
        Box::pin(async move {
            if !conn.is_in_transaction() {
                return Ok(true);
            }
            // The rollback of a dropped transaction is queued on the
            // connection's worker: once this ping is answered, it ran.
            conn.ping().await?;
            let clean = !conn.is_in_transaction();
            if !clean {
                tracing::warn!(
                    "a state store connection was left inside a failed transaction; closed"
                );
            }
            Ok(clean)
        })
    })
}

/// The connection pool of one backend.
#[derive(Clone)]
pub(crate) enum Pools {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the backend's pool and `$d` to its
/// [`crate::sql::Dialect`]: one text of each operation serves both.
macro_rules! with_pool {
    ($store:expr, |$pool:ident, $d:ident| $body:expr) => {
        match &$store.pools {
            $crate::store::Pools::Sqlite($pool) => {
                let $d = &$crate::sql::SQLITE;
                $body
            }
            $crate::store::Pools::Postgres($pool) => {
                let $d = &$crate::sql::POSTGRES;
                $body
            }
        }
    };
}
pub(crate) use with_pool;

/// Locks session `$id` in transaction `$tx` with dialect `$d`'s session
/// lock, or fails the transaction with not-found.
macro_rules! lock_session {
    ($tx:ident, $d:ident, $id:expr) => {
        sqlx::query($d.lock_session)
            .bind($id.as_str())
            .fetch_optional(&mut *$tx)
            .await?
            .ok_or_else(|| $crate::error::StateError::not_found(&$id))?
    };
}
pub(crate) use lock_session;

/// The names granted to session `$id`, read in transaction `$tx`.
macro_rules! granted_names {
    ($tx:ident, $id:expr) => {
        sqlx::query_scalar::<_, String>("SELECT name FROM session_grants WHERE session_id = $1")
            .bind($id.as_str())
            .fetch_all(&mut *$tx)
            .await?
    };
}
pub(crate) use granted_names;

/// Session `$id`'s per-session servers as `(name, config JSON)`, read in
/// transaction `$tx`.
macro_rules! server_rows {
    ($tx:ident, $id:expr) => {
        sqlx::query_as::<_, (String, String)>(
            "SELECT name, config FROM session_servers WHERE session_id = $1",
        )
        .bind($id.as_str())
        .fetch_all(&mut *$tx)
        .await?
    };
}
pub(crate) use server_rows;

/// Tells the other replicas, in transaction `$tx` of dialect `$d`, about
/// `$event` (delivered when the transaction commits; nothing on SQLite).
macro_rules! notify_others {
    ($store:expr, $tx:ident, $d:ident, $event:expr) => {
        if let (Some(sql), Some(payload)) = ($d.notify, $store.bus.payload($event)) {
            sqlx::query(sql).bind(payload).execute(&mut *$tx).await?;
        }
    };
}
pub(crate) use notify_others;

/// The durable state of a gateway: sessions, their per-session server
/// configs and their name authority, in SQLite or PostgreSQL.
///
/// Cheap to clone (the clones share one connection pool). Every write is
/// one transaction; replicas opening the same URL share everything.
#[derive(Clone)]
pub struct StateStore {
    pub(crate) pools: Pools,
    pub(crate) url: StoreUrl,
    pub(crate) limits: Limits,
    /// The replica this handle writes for (recorded with the revisions it
    /// pins), if named.
    pub(crate) replica: Option<ReplicaId>,
    pub(crate) bus: std::sync::Arc<Bus>,
    /// Held while this handle serves a gateway on an SQLite file.
    _serving: Option<std::sync::Arc<crate::serving::ServingLock>>,
}

impl fmt::Debug for StateStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateStore")
            .field("url", &self.url)
            .field("limits", &self.limits)
            .field("replica", &self.replica)
            .finish()
    }
}

impl StateStore {
    /// Opens the store at `url` (given as for `--state`) with default options.
    pub async fn open_url(url: &str) -> Result<StateStore, StateError> {
        StateStore::open(&url.parse()?, OpenOptions::default()).await
    }

    /// Opens the store at `url`, creating an SQLite file (and its
    /// directory) when missing, and migrates its schema to
    /// [`crate::SCHEMA_VERSION`]; a store from a newer extpool is refused.
    pub async fn open(url: &StoreUrl, options: OpenOptions) -> Result<StateStore, StateError> {
        let open_err = |e: sqlx::Error| StateError::Open {
            url: url.masked(),
            detail: masked_detail(&e),
        };
        // Migrates on one connection of its own (its errors are the driver's,
        // not a pool timeout), then opens the pool.
        macro_rules! migrate_then_pool {
            ($conn:ty, $pool:expr, $connect:expr, $migrate:path) => {{
                let mut conn: $conn = first_connection(&$connect, options.busy_timeout)
                    .await
                    .map_err(open_err)?;
                let migrated = $migrate(&mut conn, url).await;
                let _ = conn.close().await;
                migrated?;
                $pool
                    .max_connections(options.max_connections.max(1))
                    .acquire_timeout(options.acquire_timeout)
                    .connect_with($connect)
                    .await
                    .map_err(open_err)?
            }};
        }
        let mut serving = None;
        let pools = match url {
            StoreUrl::Sqlite(path) => {
                prepare_sqlite_file(path).map_err(|e| StateError::Open {
                    url: url.masked(),
                    detail: e.to_string(),
                })?;
                if options.serve {
                    serving = Some(std::sync::Arc::new(crate::serving::claim(path, url)?));
                }
                let connect = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Full)
                    .foreign_keys(true)
                    .busy_timeout(options.busy_timeout)
                    .disable_statement_logging();
                Pools::Sqlite(migrate_then_pool!(
                    SqliteConnection,
                    sqlite_pool(),
                    connect,
                    migrate::sqlite
                ))
            }
            StoreUrl::Postgres(text) => {
                let connect = text
                    .parse::<PgConnectOptions>()
                    .map_err(|e| StateError::BadUrl {
                        url: url.masked(),
                        reason: masked_detail(&e),
                    })?
                    .disable_statement_logging();
                Pools::Postgres(migrate_then_pool!(
                    PgConnection,
                    PgPoolOptions::new(),
                    connect,
                    migrate::postgres
                ))
            }
        };
        tracing::debug!(store = %url, "state store open");
        Ok(StateStore {
            pools,
            url: url.clone(),
            limits: options.limits,
            replica: None,
            bus: Bus::new(),
            _serving: serving,
        })
    }

    /// This handle (sharing its pool and events) writing for replica `id`:
    /// the revisions it pins are recorded as that replica's.
    pub fn for_replica(&self, id: ReplicaId) -> StateStore {
        StateStore {
            replica: Some(id),
            ..self.clone()
        }
    }

    /// The replica this handle writes for, if named.
    pub fn replica(&self) -> Option<&ReplicaId> {
        self.replica.as_ref()
    }

    /// What changes from now on: this handle's own writes, and on
    /// PostgreSQL every other replica's (see [`StoreEvent`]).
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<StoreEvent> {
        let events = self.bus.subscribe();
        if let Pools::Postgres(pool) = &self.pools {
            self.bus.listen_once(pool);
        }
        events
    }

    /// The store's URL (shown masked).
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// Which backend holds the state.
    pub fn backend(&self) -> Backend {
        self.url.backend()
    }

    /// The bounds this store applies.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The schema version the store is at (for diagnostics).
    pub async fn schema_version(&self) -> Result<i64, StateError> {
        let v: Option<i64> = with_pool!(self, |pool, _d| {
            sqlx::query_scalar("SELECT MAX(version) FROM extpool_schema")
                .fetch_one(pool)
                .await
        })
        .map_err(|e| db_error("read schema version", None, &e))?;
        Ok(v.unwrap_or(0))
    }

    /// Closes every connection; operations after this fail.
    pub async fn close(&self) {
        with_pool!(self, |pool, _d| pool.close().await)
    }
}

/// Creates the SQLite file's directory (private, 0700) and the file itself
/// (private, 0600) when missing, so sessions are never world-readable.
fn prepare_sqlite_file(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir)?;
    }
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    match o.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// What a transaction body fails with: a driver error (maybe a conflict
/// worth retrying) or a refusal of the store's own.
pub(crate) enum TxError {
    /// The database failed.
    Db(sqlx::Error),
    /// The store refused (not found, over a limit, …).
    State(StateError),
}

impl From<sqlx::Error> for TxError {
    fn from(e: sqlx::Error) -> Self {
        TxError::Db(e)
    }
}

impl From<StateError> for TxError {
    fn from(e: StateError) -> Self {
        TxError::State(e)
    }
}

/// Runs the transaction `body` of operation `op`, again (a few times) when
/// it failed on a conflict that rolled it back whole: SQLite busy past the
/// timeout, a PostgreSQL serialization failure or deadlock.
pub(crate) async fn transaction<T, F, Fut>(
    op: &'static str,
    session: Option<&SessionId>,
    mut body: F,
) -> Result<T, StateError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, TxError>>,
{
    const ATTEMPTS: u32 = 5;
    let mut attempt = 1;
    loop {
        match body().await {
            Ok(v) => return Ok(v),
            Err(TxError::State(e)) => return Err(e),
            Err(TxError::Db(e)) if attempt < ATTEMPTS && is_conflict(&e) => {
                tracing::debug!(op, attempt, error = %masked_detail(&e), "state store conflict; retrying");
                tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                attempt += 1;
            }
            Err(TxError::Db(e)) => return Err(db_error(op, session, &e)),
        }
    }
}

/// Reads a [`SessionSummary`] from a row of [`crate::sql::SUMMARY_COLUMNS`].
pub(crate) fn summary_from_row<R>(row: &R) -> Result<SessionSummary, String>
where
    R: Row,
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let get_i64 = |c: &str| row.try_get::<i64, _>(c).map_err(|e| format!("{c}: {e}"));
    let id: String = row.try_get("id").map_err(|e| format!("id: {e}"))?;
    let status: String = row.try_get("status").map_err(|e| format!("status: {e}"))?;
    let refreshed_at_ms: Option<i64> = row
        .try_get("refreshed_at_ms")
        .map_err(|e| format!("refreshed_at_ms: {e}"))?;
    let unsigned =
        |c: &str| get_i64(c).and_then(|v| u64::try_from(v).map_err(|_| format!("{c}: negative")));
    Ok(SessionSummary {
        id: SessionId::new(id).map_err(|e| e.to_string())?,
        created_at_ms: get_i64("created_at_ms")?,
        last_seen_ms: get_i64("last_seen_ms")?,
        status: SessionStatus::parse(&status).ok_or_else(|| format!("status {status:?}"))?,
        auto_grant: row
            .try_get("auto_grant")
            .map_err(|e| format!("auto_grant: {e}"))?,
        granted_count: unsigned("granted_count")?,
        server_count: unsigned("server_count")?,
        revision: unsigned("revision")?,
        revision_by: row
            .try_get("revision_by")
            .map_err(|e| format!("revision_by: {e}"))?,
        refreshed_at_ms,
        owner: row.try_get("owner").map_err(|e| format!("owner: {e}"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NewSession;

    /// Every operation's future is `Send`, so a multi-threaded server
    /// (axum handlers, spawned tasks) can await it. Checked at compile time.
    #[allow(dead_code)]
    fn every_operation_is_send(s: &StateStore, id: &SessionId, new: &NewSession) {
        fn send<T: Send>(_: T) {}
        send(StateStore::open_url("x"));
        send(s.create(new));
        send(s.get(id));
        send(s.list(None, 1));
        send(s.refresh(id, ["mcp__a__b"], 1));
        send(s.authority(id));
        send(s.set_status(id, SessionStatus::Idle));
        send(s.touch(id));
        send(s.delete(id));
        send(s.schema_version());
        send(s.close());
        let r = ReplicaId::new("r").expect("id");
        send(s.heartbeat(&r));
        send(s.sweep_replicas(Duration::from_secs(1)));
        send(s.unregister_replica(&r));
        send(s.replicas());
        send(s.hold(id, &r));
        send(s.release(id, &r));
        send(s.holders(id));
        send(s.put_mcp_session("", "m", "{}"));
        send(s.mcp_session("", "m"));
        send(s.delete_mcp_session("", "m"));
        send(s.touch_mcp_sessions(&[]));
        send(s.expire_mcp_sessions(Duration::from_secs(1)));
        send(s.list_owned(Some("o"), None, 1));
        send(s.set_mcp_session_owner("", "m", "o"));
        send(s.mcp_session_owner("", "m"));
        send(s.create_api_key("k", false));
        send(s.api_keys());
        send(s.revoke_api_key("k"));
        send(s.api_key_for("epk_x"));
        send(s.touch_api_key("k"));
    }
}
