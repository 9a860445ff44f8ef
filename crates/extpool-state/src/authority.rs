//! Name authority: what a session has been granted, and refresh — the one
//! operation that grants more.
//!
//! The rules are the behaviour doc's ("Refresh MCP tools for a session"):
//! refresh adds the currently active names to the session's authority, a
//! union that never removes a name; it is idempotent, so a retry after an
//! ambiguous failure either confirms the committed names or adds the
//! still-missing ones; it works whatever the session's status and never
//! changes it; a name that vanished stays granted. Concurrent refreshes of
//! one session (from two replicas) are serialized by the session lock of
//! the backend's dialect, so no grant is ever lost.

use std::collections::{BTreeSet, HashSet};

use crate::error::StateError;
use crate::events::StoreEvent;
use crate::limits::distinct;
use crate::model::{NameAuthority, RefreshOutcome, ReplicaId, SessionId};
use crate::sessions::revision_i64;
use crate::store::{
    StateStore, TxError, granted_names, lock_session, notify_others, now_ms, transaction, with_pool,
};

/// Inserts grants of `$names` (`&[&String]`) for session `$id` at
/// `$revision` and time `$now`, in chunks, inside transaction `$tx`.
macro_rules! insert_grants {
    ($tx:expr, $id:expr, $names:expr, $revision:expr, $now:expr) => {{
        let names: &[&String] = $names;
        for chunk in names.chunks($crate::sql::GRANT_CHUNK) {
            let sql = $crate::sql::insert_grants(chunk.len());
            let mut q = sqlx::query(&sql)
                .bind($id.as_str())
                .bind($revision)
                .bind($now);
            for name in chunk {
                q = q.bind(name.as_str());
            }
            q.execute($tx).await?;
        }
    }};
}
pub(crate) use insert_grants;

impl StateStore {
    /// Grants session `id` every name of `active` — the direct names active
    /// in catalog `revision`, as this replica sees it — that it does not
    /// hold yet. Never removes a name; idempotent; allowed in every status
    /// (idle, completed, active) and leaves the status alone. Refused,
    /// granting nothing, when a name is invalid or the union would pass
    /// [`crate::Limits::max_names_per_session`].
    pub async fn refresh<I, S>(
        &self,
        id: &SessionId,
        active: I,
        revision: u64,
    ) -> Result<RefreshOutcome, StateError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let active = distinct(active);
        self.limits.check_names(id, &active)?;
        let stored_revision = revision_i64(id, revision)?;
        let now = now_ms();
        let (added, held) = transaction("refresh", Some(id), || {
            self.refresh_once(id, &active, stored_revision, now)
        })
        .await?;
        let granted_count = (held + added.len()) as u64;
        tracing::debug!(session = %id, revision, added = added.len(), granted_count, "session refreshed");
        if !added.is_empty() {
            self.bus.publish(StoreEvent::Granted(id.clone()));
        }
        Ok(RefreshOutcome {
            session: id.clone(),
            revision,
            replica: self.replica.as_ref().map(|r| r.as_str().to_owned()),
            changed: !added.is_empty(),
            added,
            granted_count,
        })
    }

    /// The session's authority alone (no server configs), for deciding what
    /// it may see on each catalog revision.
    pub async fn authority(&self, id: &SessionId) -> Result<NameAuthority, StateError> {
        let (auto_grant, granted) =
            transaction("read authority", Some(id), || self.authority_once(id)).await?;
        Ok(NameAuthority {
            auto_grant,
            granted: granted.into_iter().collect::<BTreeSet<_>>(),
        })
    }

    /// One attempt of [`StateStore::refresh`]: the names it added and how
    /// many the session held before.
    async fn refresh_once(
        &self,
        id: &SessionId,
        active: &BTreeSet<String>,
        revision: i64,
        now: i64,
    ) -> Result<(Vec<String>, usize), TxError> {
        with_pool!(self, |pool, d| {
            let mut tx = pool.begin_with(d.begin_write).await?;
            lock_session!(tx, d, id);
            let existing = granted_names!(tx, id);
            let missing = missing_names(active, &existing);
            self.limits
                .check_name_count(id, existing.len(), missing.len())?;
            insert_grants!(&mut *tx, id, &missing, revision, now);
            sqlx::query(
                "UPDATE sessions SET revision = $2, refreshed_at_ms = $3, revision_by = $4 \
                 WHERE id = $1",
            )
            .bind(id.as_str())
            .bind(revision)
            .bind(now)
            .bind(self.replica.as_ref().map(ReplicaId::as_str))
            .execute(&mut *tx)
            .await?;
            if !missing.is_empty() {
                notify_others!(self, tx, d, &StoreEvent::Granted(id.clone()));
            }
            tx.commit().await?;
            Ok((missing.into_iter().cloned().collect(), existing.len()))
        })
    }

    /// One attempt of [`StateStore::authority`].
    async fn authority_once(&self, id: &SessionId) -> Result<(bool, Vec<String>), TxError> {
        with_pool!(self, |pool, d| {
            let mut tx = pool.begin_with(d.begin_read).await?;
            let auto_grant: bool =
                sqlx::query_scalar("SELECT auto_grant FROM sessions WHERE id = $1")
                    .bind(id.as_str())
                    .fetch_optional(&mut *tx)
                    .await?
                    .ok_or_else(|| StateError::not_found(id))?;
            let granted = granted_names!(tx, id);
            tx.commit().await?;
            Ok((auto_grant, granted))
        })
    }
}

/// The names of `active` not in `existing`, sorted.
fn missing_names<'a>(active: &'a BTreeSet<String>, existing: &[String]) -> Vec<&'a String> {
    let existing: HashSet<&str> = existing.iter().map(String::as_str).collect();
    active
        .iter()
        .filter(|n| !existing.contains(n.as_str()))
        .collect()
}
