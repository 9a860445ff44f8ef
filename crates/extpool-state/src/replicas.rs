//! Replicas sharing one store: who is alive (heartbeats under a lease) and
//! which sessions each holds open — connected to their per-session
//! servers, through its own pool.
//!
//! A replica opens a session when it first needs it and records the hold;
//! when it goes away cleanly it removes its record, and when it dies its
//! heartbeats stop and any other replica sweeps it (and its holds) once
//! the lease has passed. Nothing else depends on the dead replica: the
//! next replica a client reaches opens the session from the store.

use std::time::Duration;

use crate::error::{StateError, db_error};
use crate::model::{ReplicaId, ReplicaInfo, SessionId};
use crate::store::{StateStore, TxError, now_ms, transaction, with_pool};

/// Registers replica `$id` at `$now` (or renews its heartbeat) in `$tx`.
macro_rules! upsert_replica {
    ($tx:expr, $id:expr, $now:expr) => {
        sqlx::query(
            "INSERT INTO replicas (id, started_at_ms, heartbeat_ms) VALUES ($1, $2, $2) \
             ON CONFLICT (id) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms",
        )
        .bind($id.as_str())
        .bind($now)
        .execute($tx)
        .await?
    };
}

impl StateStore {
    /// Renews replica `id`'s heartbeat, registering it when it is not
    /// registered. Returns `false` when it was not (first beat, or swept
    /// after its heartbeats stopped for longer than the lease): the
    /// sessions it holds open must then be held again.
    pub async fn heartbeat(&self, id: &ReplicaId) -> Result<bool, StateError> {
        let now = now_ms();
        transaction("replica heartbeat", None, || async {
            with_pool!(self, |pool, d| {
                let mut tx = pool.begin_with(d.begin_write).await?;
                let renewed = sqlx::query("UPDATE replicas SET heartbeat_ms = $2 WHERE id = $1")
                    .bind(id.as_str())
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if renewed == 0 {
                    upsert_replica!(&mut *tx, id, now);
                }
                tx.commit().await?;
                Ok(renewed > 0)
            })
        })
        .await
    }

    /// Removes the replicas whose last heartbeat is older than `lease`,
    /// with their holds, and returns them with the sessions they held.
    pub async fn sweep_replicas(
        &self,
        lease: Duration,
    ) -> Result<Vec<(ReplicaId, Vec<SessionId>)>, StateError> {
        let cutoff = now_ms().saturating_sub(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
        let rows: Vec<(String, Option<String>)> = transaction("sweep replicas", None, || async {
            with_pool!(self, |pool, d| {
                let mut tx = pool.begin_with(d.begin_write).await?;
                let rows = sqlx::query_as::<_, (String, Option<String>)>(
                    "SELECT r.id, h.session_id FROM replicas r \
                         LEFT JOIN session_holders h ON h.replica_id = r.id \
                         WHERE r.heartbeat_ms < $1 ORDER BY r.id, h.session_id",
                )
                .bind(cutoff)
                .fetch_all(&mut *tx)
                .await?;
                for sql in [
                    "DELETE FROM session_holders WHERE replica_id IN \
                         (SELECT id FROM replicas WHERE heartbeat_ms < $1)",
                    "DELETE FROM replicas WHERE heartbeat_ms < $1",
                ] {
                    sqlx::query(sql).bind(cutoff).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(rows)
            })
        })
        .await?;
        let mut gone: Vec<(ReplicaId, Vec<SessionId>)> = Vec::new();
        for (replica, session) in rows {
            let Ok(replica) = ReplicaId::new(replica) else {
                continue;
            };
            if gone.last().is_none_or(|(r, _)| *r != replica) {
                gone.push((replica, Vec::new()));
            }
            if let (Some((_, held)), Some(Ok(session))) =
                (gone.last_mut(), session.map(SessionId::new))
            {
                held.push(session);
            }
        }
        Ok(gone)
    }

    /// Removes replica `id` and its holds (it stops cleanly).
    pub async fn unregister_replica(&self, id: &ReplicaId) -> Result<(), StateError> {
        transaction("unregister replica", None, || async {
            with_pool!(self, |pool, d| {
                let mut tx = pool.begin_with(d.begin_write).await?;
                for sql in [
                    "DELETE FROM session_holders WHERE replica_id = $1",
                    "DELETE FROM replicas WHERE id = $1",
                ] {
                    sqlx::query(sql).bind(id.as_str()).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(())
            })
        })
        .await
    }

    /// The registered replicas, by id, with how many sessions each holds.
    pub async fn replicas(&self) -> Result<Vec<ReplicaInfo>, StateError> {
        let rows: Vec<(String, i64, i64, i64)> = with_pool!(self, |pool, _d| {
            sqlx::query_as(
                "SELECT r.id, r.started_at_ms, r.heartbeat_ms, \
                 (SELECT COUNT(*) FROM session_holders h WHERE h.replica_id = r.id) \
                 FROM replicas r ORDER BY r.id",
            )
            .fetch_all(pool)
            .await
        })
        .map_err(|e| db_error("list replicas", None, &e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, started_at_ms, heartbeat_ms, sessions)| {
                Some(ReplicaInfo {
                    id: ReplicaId::new(id).ok()?,
                    started_at_ms,
                    heartbeat_ms,
                    sessions: u64::try_from(sessions).unwrap_or(0),
                })
            })
            .collect())
    }

    /// Records that replica `replica` holds `session` open (registering the
    /// replica if it was swept). Fails with not-found when the session
    /// does not exist.
    pub async fn hold(&self, session: &SessionId, replica: &ReplicaId) -> Result<(), StateError> {
        let now = now_ms();
        transaction("hold session", Some(session), || async {
            with_pool!(self, |pool, d| {
                let mut tx = pool.begin_with(d.begin_write).await?;
                upsert_replica!(&mut *tx, replica, now);
                let held = sqlx::query(
                    "INSERT INTO session_holders (session_id, replica_id, opened_at_ms) \
                     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1) \
                     ON CONFLICT DO NOTHING",
                )
                .bind(session.as_str())
                .bind(replica.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if held == 0 {
                    let exists: Option<String> =
                        sqlx::query_scalar("SELECT id FROM sessions WHERE id = $1")
                            .bind(session.as_str())
                            .fetch_optional(&mut *tx)
                            .await?;
                    if exists.is_none() {
                        return Err(TxError::State(StateError::not_found(session)));
                    }
                }
                tx.commit().await?;
                Ok(())
            })
        })
        .await
    }

    /// Records that replica `replica` no longer holds `session` open.
    pub async fn release(
        &self,
        session: &SessionId,
        replica: &ReplicaId,
    ) -> Result<(), StateError> {
        with_pool!(self, |pool, _d| {
            sqlx::query("DELETE FROM session_holders WHERE session_id = $1 AND replica_id = $2")
                .bind(session.as_str())
                .bind(replica.as_str())
                .execute(pool)
                .await
                .map(|_| ())
        })
        .map_err(|e| db_error("release session", Some(session), &e))?;
        Ok(())
    }

    /// The replicas holding `session` open, by id.
    pub async fn holders(&self, session: &SessionId) -> Result<Vec<ReplicaId>, StateError> {
        let rows: Vec<String> = with_pool!(self, |pool, _d| {
            sqlx::query_scalar(
                "SELECT replica_id FROM session_holders WHERE session_id = $1 ORDER BY replica_id",
            )
            .bind(session.as_str())
            .fetch_all(pool)
            .await
        })
        .map_err(|e| db_error("read session holders", Some(session), &e))?;
        Ok(rows
            .into_iter()
            .filter_map(|r| ReplicaId::new(r).ok())
            .collect())
    }
}
