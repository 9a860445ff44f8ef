//! Sessions: create, get, list, status, delete.

use std::collections::{BTreeMap, BTreeSet};

use crate::authority::insert_grants;
use crate::error::{StateError, db_error, quote_prefix};
use crate::events::StoreEvent;
use crate::limits::check_owner;
use crate::model::{
    NameAuthority, NewSession, ReplicaId, Session, SessionCursor, SessionId, SessionPage,
    SessionStatus, SessionSummary,
};
use crate::sql::SUMMARY_COLUMNS;
use crate::store::{
    StateStore, TxError, granted_names, lock_session, notify_others, now_ms, server_rows,
    summary_from_row, transaction, with_pool,
};
use extpool_mcp::config::McpServerConfig;

impl StateStore {
    /// Creates a session with its per-session servers, the names it is
    /// granted at creation and its owner, in one transaction. Refused,
    /// writing nothing, when the id exists, a bound is exceeded (the owner
    /// is over [`crate::limits::MAX_OWNER_BYTES`] or empty) or a server
    /// config holds resolved secrets.
    pub async fn create(&self, new: &NewSession) -> Result<Session, StateError> {
        let id = &new.id;
        if let Some(owner) = &new.owner {
            check_owner(owner).map_err(|reason| StateError::InvalidOwner {
                session: Some(id.clone()),
                owner: quote_prefix(owner),
                reason,
            })?;
        }
        let servers = self.limits.encode_servers(id, &new.servers)?;
        self.limits.check_names(id, &new.granted)?;
        self.limits.check_name_count(id, 0, new.granted.len())?;
        let revision = revision_i64(id, new.revision)?;
        let names: Vec<&String> = new.granted.iter().collect();
        let now = now_ms();
        transaction("create session", Some(id), || {
            self.create_once(new, &servers, &names, revision, now)
        })
        .await?;
        tracing::debug!(session = %id, servers = servers.len(), granted = names.len(), "session created");
        self.get(id).await
    }

    /// The session `id` with its servers and authority, read from one
    /// snapshot.
    pub async fn get(&self, id: &SessionId) -> Result<Session, StateError> {
        let sql = format!("SELECT {SUMMARY_COLUMNS} FROM sessions s WHERE s.id = $1");
        let (summary, servers, granted) =
            transaction("get session", Some(id), || self.get_once(id, &sql)).await?;
        let servers = servers
            .into_iter()
            .map(|(name, json)| {
                let config = decode_config(&json).map_err(|detail| {
                    corrupt(id, &format!("per-session server {name:?} config"), detail)
                })?;
                Ok((name, config))
            })
            .collect::<Result<BTreeMap<_, _>, StateError>>()?;
        let authority = NameAuthority {
            auto_grant: summary.auto_grant,
            granted: granted.into_iter().collect::<BTreeSet<_>>(),
        };
        Ok(Session {
            summary,
            servers,
            authority,
        })
    }

    /// How many sessions `owner` holds (`None`: the unowned ones).
    pub async fn count_owned(&self, owner: Option<&str>) -> Result<u64, StateError> {
        let held: i64 = with_pool!(self, |pool, _d| {
            sqlx::query_scalar(owned_count_sql(owner))
                .bind(owner)
                .fetch_one(pool)
                .await
                .map_err(|e| db_error("count sessions", None, &e))?
        });
        Ok(u64::try_from(held).unwrap_or(0))
    }

    /// One page of sessions, oldest first, starting after `after` (from
    /// the previous page's [`SessionPage::next`]). `limit` is capped at
    /// [`crate::Limits::max_page`]; 0 asks for the largest page. Every
    /// session, whoever owns it: [`StateStore::list_owned`] with `None`.
    pub async fn list(
        &self,
        after: Option<&SessionCursor>,
        limit: usize,
    ) -> Result<SessionPage, StateError> {
        self.list_owned(None, after, limit).await
    }

    /// One page of the sessions of `owner` (a principal), or of every
    /// session when `None`, oldest first, with the paging rules of
    /// [`StateStore::list`] (a cursor continues the list it came from).
    /// An owner that could not be stored (empty, over
    /// [`crate::limits::MAX_OWNER_BYTES`]) is refused.
    pub async fn list_owned(
        &self,
        owner: Option<&str>,
        after: Option<&SessionCursor>,
        limit: usize,
    ) -> Result<SessionPage, StateError> {
        if let Some(owner) = owner {
            check_owner(owner).map_err(|reason| StateError::InvalidOwner {
                session: None,
                owner: quote_prefix(owner),
                reason,
            })?;
        }
        let limit = self.limits.page_size(limit);
        let (after_ms, after_id) = match after {
            Some(c) => {
                let (ms, id) = c.position()?;
                (ms, id.as_str().to_owned())
            }
            None => (i64::MIN, String::new()),
        };
        // One text per case (not `$4 IS NULL OR …`), so an owner's page is
        // read through its index on both backends.
        let of_owner = if owner.is_some() {
            "s.owner = $4 AND "
        } else {
            ""
        };
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM sessions s \
             WHERE {of_owner}(s.created_at_ms > $1 OR (s.created_at_ms = $1 AND s.id > $2)) \
             ORDER BY s.created_at_ms, s.id LIMIT $3"
        );
        let fetch = i64::try_from(limit + 1).unwrap_or(i64::MAX);
        let rows = with_pool!(self, |pool, _d| {
            let mut q = sqlx::query(&sql).bind(after_ms).bind(&after_id).bind(fetch);
            if let Some(owner) = owner {
                q = q.bind(owner);
            }
            let rows = q
                .fetch_all(pool)
                .await
                .map_err(|e| db_error("list sessions", None, &e))?;
            rows.iter()
                .map(summary_from_row)
                .collect::<Result<Vec<_>, String>>()
        });
        let mut sessions = rows.map_err(|detail| StateError::Database {
            op: "list sessions",
            session: None,
            detail: format!("unreadable row: {detail}"),
            transient: false,
        })?;
        let next = if sessions.len() > limit {
            sessions.truncate(limit);
            sessions
                .last()
                .map(|s| SessionCursor::after(s.created_at_ms, &s.id))
        } else {
            None
        };
        Ok(SessionPage { sessions, next })
    }

    /// Sets the session's status (and its last-seen time). Refresh never
    /// changes it: a completed session stays completed.
    pub async fn set_status(
        &self,
        id: &SessionId,
        status: SessionStatus,
    ) -> Result<(), StateError> {
        self.update_one(
            "set session status",
            id,
            "UPDATE sessions SET status = $2, last_seen_ms = $3 WHERE id = $1",
            Some(status.as_str()),
        )
        .await
    }

    /// Records that a client used the session now.
    pub async fn touch(&self, id: &SessionId) -> Result<(), StateError> {
        self.update_one(
            "touch session",
            id,
            "UPDATE sessions SET last_seen_ms = $2 WHERE id = $1",
            None,
        )
        .await
    }

    /// Runs one `UPDATE` of session `id` binding `$1` id, then `text` (if
    /// any) and the time; fails with not-found when no row matched.
    async fn update_one(
        &self,
        op: &'static str,
        id: &SessionId,
        sql: &str,
        text: Option<&str>,
    ) -> Result<(), StateError> {
        let now = now_ms();
        let updated = transaction(op, Some(id), || self.update_once(id, sql, text, now)).await?;
        if updated == 0 {
            return Err(StateError::not_found(id));
        }
        Ok(())
    }

    /// Deletes the session with its grants and returns its per-session
    /// server configs, so the caller can close those servers. A config
    /// that cannot be read back is left out (and logged by name).
    pub async fn delete(
        &self,
        id: &SessionId,
    ) -> Result<BTreeMap<String, McpServerConfig>, StateError> {
        let servers = transaction("delete session", Some(id), || self.delete_once(id)).await?;
        tracing::debug!(session = %id, servers = servers.len(), "session deleted");
        self.bus.publish(StoreEvent::Deleted(id.clone()));
        Ok(servers
            .into_iter()
            .filter_map(|(name, json)| match decode_config(&json) {
                Ok(config) => Some((name, config)),
                Err(detail) => {
                    tracing::warn!(session = %id, server = %name, %detail, "deleted session's server config is unreadable");
                    None
                }
            })
            .collect())
    }
}

/// The count of one owner's sessions (`$1`: the owner; unowned ones
/// when `None`, which the text then does not read), by the owner index.
fn owned_count_sql(owner: Option<&str>) -> &'static str {
    match owner {
        Some(_) => "SELECT COUNT(*) FROM sessions WHERE owner = $1",
        None => "SELECT COUNT(*) FROM sessions WHERE owner IS NULL OR owner = $1",
    }
}

/// Single attempts of the operations above, retried by [`transaction`].
impl StateStore {
    async fn create_once(
        &self,
        new: &NewSession,
        servers: &[(String, String)],
        names: &[&String],
        revision: i64,
        now: i64,
    ) -> Result<(), TxError> {
        let id = &new.id;
        with_pool!(self, |pool, d| {
            let mut tx = pool.begin_with(d.begin_write).await?;
            if let Some(max) = new.max_owned {
                if let Some(lock) = d.lock_owner {
                    sqlx::query(lock)
                        .bind(new.owner.as_deref().unwrap_or(""))
                        .execute(&mut *tx)
                        .await?;
                }
                let held: i64 = sqlx::query_scalar(owned_count_sql(new.owner.as_deref()))
                    .bind(new.owner.as_deref())
                    .fetch_one(&mut *tx)
                    .await?;
                let held = u64::try_from(held).unwrap_or(0);
                if held >= max as u64 {
                    return Err(TxError::State(StateError::TooManySessions {
                        owner: new.owner.as_deref().map(quote_prefix),
                        held,
                        limit: max,
                    }));
                }
            }
            let inserted = sqlx::query(
                "INSERT INTO sessions (id, created_at_ms, last_seen_ms, status, auto_grant, \
                 revision, revision_by, refreshed_at_ms, owner) \
                 VALUES ($1, $2, $2, $3, $4, $5, $6, NULL, $7) ON CONFLICT DO NOTHING",
            )
            .bind(id.as_str())
            .bind(now)
            .bind(new.status.as_str())
            .bind(new.auto_grant)
            .bind(revision)
            .bind(self.replica.as_ref().map(ReplicaId::as_str))
            .bind(new.owner.as_deref())
            .execute(&mut *tx)
            .await?;
            if inserted.rows_affected() == 0 {
                return Err(TxError::State(StateError::AlreadyExists {
                    session: id.clone(),
                }));
            }
            for (name, config) in servers {
                sqlx::query(
                    "INSERT INTO session_servers (session_id, name, config) VALUES ($1, $2, $3)",
                )
                .bind(id.as_str())
                .bind(name.as_str())
                .bind(config.as_str())
                .execute(&mut *tx)
                .await?;
            }
            insert_grants!(&mut *tx, id, names, revision, now);
            tx.commit().await?;
            Ok(())
        })
    }

    async fn get_once(
        &self,
        id: &SessionId,
        sql: &str,
    ) -> Result<(SessionSummary, Vec<(String, String)>, Vec<String>), TxError> {
        with_pool!(self, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read).await?;
            let row = sqlx::query(sql)
                .bind(id.as_str())
                .fetch_optional(&mut *tx)
                .await?
                .ok_or_else(|| StateError::not_found(id))?;
            let summary =
                summary_from_row(&row).map_err(|detail| corrupt(id, "session", detail))?;
            let servers = server_rows!(tx, id);
            let granted = granted_names!(tx, id);
            tx.commit().await?;
            Ok((summary, servers, granted))
        })
    }

    async fn update_once(
        &self,
        id: &SessionId,
        sql: &str,
        text: Option<&str>,
        now: i64,
    ) -> Result<u64, TxError> {
        with_pool!(self, |pool, _d| {
            let mut q = sqlx::query(sql).bind(id.as_str());
            if let Some(t) = text {
                q = q.bind(t);
            }
            Ok(q.bind(now).execute(pool).await?.rows_affected())
        })
    }

    async fn delete_once(&self, id: &SessionId) -> Result<Vec<(String, String)>, TxError> {
        with_pool!(self, |pool, d| {
            let mut tx = pool.begin_with(d.begin_write).await?;
            lock_session!(tx, d, id);
            let servers = server_rows!(tx, id);
            for sql in [
                "DELETE FROM session_grants WHERE session_id = $1",
                "DELETE FROM session_servers WHERE session_id = $1",
                "DELETE FROM session_holders WHERE session_id = $1",
                "DELETE FROM mcp_sessions WHERE endpoint = $1",
                "DELETE FROM sessions WHERE id = $1",
            ] {
                sqlx::query(sql).bind(id.as_str()).execute(&mut *tx).await?;
            }
            notify_others!(self, tx, d, &StoreEvent::Deleted(id.clone()));
            tx.commit().await?;
            Ok(servers)
        })
    }
}

/// A stored revision: catalog revisions are `u64`, columns `BIGINT`.
pub(crate) fn revision_i64(id: &SessionId, revision: u64) -> Result<i64, StateError> {
    i64::try_from(revision).map_err(|_| StateError::RevisionOutOfRange {
        session: id.clone(),
        revision,
    })
}

fn decode_config(json: &str) -> Result<McpServerConfig, String> {
    serde_json::from_str(json).map_err(|e| e.to_string())
}

fn corrupt(id: &SessionId, what: &str, detail: String) -> StateError {
    StateError::Corrupt {
        session: id.clone(),
        what: what.to_owned(),
        detail,
    }
}
