//! Session-era MCP sessions any replica can resume.
//!
//! A client of the 2025 protocol era gets an `Mcp-Session-Id` from the
//! replica that answered its `initialize`, and sends it with every later
//! request — which a load balancer may route to another replica. The
//! session's record (its `initialize` parameters) is kept here, so that
//! replica can rebuild the session and replay the handshake; the upstream
//! connections it then uses are its own. A record belongs to one endpoint
//! (`""` for `/mcp`, else a durable session's id) and is resumable there
//! only. Records no replica has seen for longer than the keep-alive
//! expire: their clients start new sessions, as the protocol says. A
//! record may name its owner (the principal that started it), kept
//! whenever the record is stored again, for a replica to check before it
//! resumes the session for a client.

use std::time::Duration;

use crate::error::{StateError, db_error, quote_prefix};
use crate::events::StoreEvent;
use crate::limits::check_owner;
use crate::model::SessionId;
use crate::store::{StateStore, TxError, notify_others, now_ms, transaction, with_pool};

/// Longest `Mcp-Session-Id` kept, in bytes.
pub const MAX_MCP_SESSION_ID_BYTES: usize = 128;

/// How many ids one `UPDATE` touches at most.
const TOUCH_CHUNK: usize = 200;

/// Checks an MCP session's id and endpoint before they reach the store.
fn check(endpoint: &str, id: &str) -> Result<(), StateError> {
    let bad = |reason: String| StateError::BadMcpSession {
        id: quote_prefix(id),
        reason,
    };
    if id.is_empty() || id.len() > MAX_MCP_SESSION_ID_BYTES {
        return Err(bad(format!(
            "an id is 1 to {MAX_MCP_SESSION_ID_BYTES} bytes"
        )));
    }
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("an id is visible ASCII only".into()));
    }
    if !endpoint.is_empty() {
        SessionId::new(endpoint).map_err(|e| bad(format!("endpoint: {e}")))?;
    }
    Ok(())
}

impl StateStore {
    /// Claims MCP session `id` of `endpoint` for `owner` before it is made:
    /// its record is written (owned, its parameters to come from
    /// [`StateStore::put_mcp_session`]) unless `owner` already holds `max`
    /// MCP sessions seen within `live` on any replica sharing this store —
    /// then nothing is written and `Ok(Err(held))` says how many it holds.
    /// The count and the write are one transaction under the owner's lock,
    /// so two replicas claiming for one owner at once never both pass the
    /// last place.
    pub async fn claim_mcp_session(
        &self,
        (endpoint, id): (&str, &str),
        owner: &str,
        max: usize,
        live: Duration,
    ) -> Result<Result<(), u64>, StateError> {
        check(endpoint, id)?;
        check_owner(owner).map_err(|reason| StateError::BadMcpSession {
            id: quote_prefix(id),
            reason: format!("owner {:?}: {reason}", quote_prefix(owner)),
        })?;
        let now = now_ms();
        let since = now.saturating_sub(i64::try_from(live.as_millis()).unwrap_or(i64::MAX));
        transaction("claim MCP session", None, || async {
            with_pool!(self, |pool, d| {
                let mut tx = pool.begin_with(d.begin_write).await?;
                if let Some(lock) = d.lock_owner {
                    sqlx::query(lock).bind(owner).execute(&mut *tx).await?;
                }
                let held: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM mcp_sessions WHERE owner = $1 AND seen_ms >= $2",
                )
                .bind(owner)
                .bind(since)
                .fetch_one(&mut *tx)
                .await?;
                let held = u64::try_from(held).unwrap_or(0);
                if held >= max as u64 {
                    return Ok::<_, TxError>(Err(held));
                }
                sqlx::query(
                    "INSERT INTO mcp_sessions (id, endpoint, init, created_at_ms, seen_ms, owner) \
                     VALUES ($1, $2, '{}', $3, $3, $4)",
                )
                .bind(id)
                .bind(endpoint)
                .bind(now)
                .bind(owner)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(Ok(()))
            })
        })
        .await
    }

    /// Keeps MCP session `id` of `endpoint` with its client's `initialize`
    /// parameters (`init`, JSON), so that any replica can resume it.
    /// Refused when `init` is larger than [`crate::Limits::max_init_bytes`].
    /// Keeping a record again (rmcp does) replaces its parameters but never
    /// its owner ([`StateStore::set_mcp_session_owner`]).
    pub async fn put_mcp_session(
        &self,
        endpoint: &str,
        id: &str,
        init: &str,
    ) -> Result<(), StateError> {
        check(endpoint, id)?;
        if init.len() > self.limits.max_init_bytes {
            return Err(StateError::BadMcpSession {
                id: quote_prefix(id),
                reason: format!(
                    "initialize parameters of {} bytes, over the limit of {}",
                    init.len(),
                    self.limits.max_init_bytes
                ),
            });
        }
        let now = now_ms();
        with_pool!(self, |pool, _d| {
            sqlx::query(
                "INSERT INTO mcp_sessions (id, endpoint, init, created_at_ms, seen_ms) \
                 VALUES ($1, $2, $3, $4, $4) ON CONFLICT (id) DO UPDATE \
                 SET endpoint = excluded.endpoint, init = excluded.init, seen_ms = excluded.seen_ms",
            )
            .bind(id)
            .bind(endpoint)
            .bind(init)
            .bind(now)
            .execute(pool)
            .await
            .map(|_| ())
        })
        .map_err(|e| db_error("keep MCP session", None, &e))?;
        Ok(())
    }

    /// The `initialize` parameters of MCP session `id` of `endpoint`,
    /// marking it seen now; `None` when there is no such session there
    /// (never kept, ended, expired, or another endpoint's).
    pub async fn mcp_session(
        &self,
        endpoint: &str,
        id: &str,
    ) -> Result<Option<String>, StateError> {
        if check(endpoint, id).is_err() {
            return Ok(None);
        }
        let now = now_ms();
        with_pool!(self, |pool, _d| {
            sqlx::query_scalar::<_, String>(
                "UPDATE mcp_sessions SET seen_ms = $3 WHERE id = $1 AND endpoint = $2 \
                 RETURNING init",
            )
            .bind(id)
            .bind(endpoint)
            .bind(now)
            .fetch_optional(pool)
            .await
        })
        .map_err(|e| db_error("resume MCP session", None, &e))
    }

    /// Makes principal `owner` the owner of MCP session `id` of
    /// `endpoint`, replacing any owner it had. Returns whether the record
    /// exists (never kept, ended, expired or another endpoint's: `false`,
    /// nothing written). Refused when `owner` is empty or over
    /// [`crate::limits::MAX_OWNER_BYTES`].
    pub async fn set_mcp_session_owner(
        &self,
        endpoint: &str,
        id: &str,
        owner: &str,
    ) -> Result<bool, StateError> {
        check_owner(owner).map_err(|reason| StateError::BadMcpSession {
            id: quote_prefix(id),
            reason: format!("owner {:?}: {reason}", quote_prefix(owner)),
        })?;
        if check(endpoint, id).is_err() {
            return Ok(false);
        }
        let updated = with_pool!(self, |pool, _d| {
            sqlx::query("UPDATE mcp_sessions SET owner = $3 WHERE id = $1 AND endpoint = $2")
                .bind(id)
                .bind(endpoint)
                .bind(owner)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
        })
        .map_err(|e| db_error("set MCP session owner", None, &e))?;
        Ok(updated > 0)
    }

    /// The owner of MCP session `id` of `endpoint`: `None` when there is
    /// no such record there, `Some(None)` when it has no owner. Reading it
    /// does not mark the session seen.
    pub async fn mcp_session_owner(
        &self,
        endpoint: &str,
        id: &str,
    ) -> Result<Option<Option<String>>, StateError> {
        if check(endpoint, id).is_err() {
            return Ok(None);
        }
        with_pool!(self, |pool, _d| {
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT owner FROM mcp_sessions WHERE id = $1 AND endpoint = $2",
            )
            .bind(id)
            .bind(endpoint)
            .fetch_optional(pool)
            .await
        })
        .map_err(|e| db_error("read MCP session owner", None, &e))
    }

    /// Ends MCP session `id` of `endpoint` (its client said so): forgotten
    /// here, and every replica told ([`StoreEvent::McpSessionClosed`]).
    /// Returns whether it was kept.
    pub async fn delete_mcp_session(&self, endpoint: &str, id: &str) -> Result<bool, StateError> {
        if check(endpoint, id).is_err() {
            return Ok(false);
        }
        let event = StoreEvent::McpSessionClosed {
            endpoint: endpoint.to_owned(),
            id: id.to_owned(),
        };
        let deleted = transaction("end MCP session", None, || async {
            with_pool!(self, |pool, d| {
                let mut tx = pool.begin_with(d.begin_write).await?;
                let deleted =
                    sqlx::query("DELETE FROM mcp_sessions WHERE id = $1 AND endpoint = $2")
                        .bind(id)
                        .bind(endpoint)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                notify_others!(self, tx, d, &event);
                tx.commit().await?;
                Ok::<_, TxError>(deleted > 0)
            })
        })
        .await?;
        self.bus.publish(event);
        Ok(deleted)
    }

    /// Marks the MCP sessions `ids` seen now (a replica still holds them),
    /// so they do not expire. Returns how many are kept.
    pub async fn touch_mcp_sessions(&self, ids: &[String]) -> Result<u64, StateError> {
        let now = now_ms();
        let mut touched = 0;
        for chunk in ids.chunks(TOUCH_CHUNK) {
            let mut sql = String::from("UPDATE mcp_sessions SET seen_ms = $1 WHERE id IN (");
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!("${}", i + 2));
            }
            sql.push(')');
            touched += with_pool!(self, |pool, _d| {
                let mut q = sqlx::query(&sql).bind(now);
                for id in chunk {
                    q = q.bind(id.as_str());
                }
                q.execute(pool).await.map(|r| r.rows_affected())
            })
            .map_err(|e| db_error("touch MCP sessions", None, &e))?;
        }
        Ok(touched)
    }

    /// Forgets the MCP sessions no replica has seen for `idle`; returns
    /// how many.
    pub async fn expire_mcp_sessions(&self, idle: Duration) -> Result<u64, StateError> {
        let cutoff = now_ms().saturating_sub(i64::try_from(idle.as_millis()).unwrap_or(i64::MAX));
        with_pool!(self, |pool, _d| {
            sqlx::query("DELETE FROM mcp_sessions WHERE seen_ms < $1")
                .bind(cutoff)
                .execute(pool)
                .await
                .map(|r| r.rows_affected())
        })
        .map_err(|e| db_error("expire MCP sessions", None, &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_endpoints_are_checked() {
        assert!(check("", "0b2f11ee-aaaa").is_ok());
        assert!(check("s-1", "0b2f11ee-aaaa").is_ok());
        for (endpoint, id) in [
            ("", ""),
            ("", "a b"),
            ("", "é"),
            ("a/b", "x"),
            ("", &"x".repeat(129)),
        ] {
            let e = check(endpoint, id).expect_err(id);
            assert!(e.to_string().starts_with("MCP session"), "{e}");
        }
    }
}
