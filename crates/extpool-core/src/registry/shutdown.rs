//! Shutdown order (RFC "Shutdown"): turn → agent → session → pool, reverse
//! registration order within a slot, each capability bounded by a timeout
//! after which its shutdown future is dropped (cancelled). A hung capability
//! costs at most its timeout; it never blocks the ones after it.

use std::sync::Arc;
use std::time::Duration;

use super::ExtensionRegistry;
use crate::{Capability, Scope, ScopeKey, ScopeLevel};

/// How one capability's shutdown ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShutdownOutcome {
    /// Finished in time.
    Clean,
    /// Returned an error (logged).
    Failed(String),
    /// Exceeded the timeout and was cancelled.
    TimedOut,
}

/// One capability in a shutdown report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownEntry {
    /// The capability id.
    pub id: String,
    /// The slot it was registered in.
    pub key: ScopeKey,
    /// How it ended.
    pub outcome: ShutdownOutcome,
}

/// Every capability that was shut down, in the order it happened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Entries in shutdown order.
    pub entries: Vec<ShutdownEntry>,
}

impl ShutdownReport {
    /// Ids in shutdown order.
    pub fn order(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.id.as_str()).collect()
    }
}

pub(crate) async fn shutdown_one(
    cap: Arc<dyn Capability>,
    key: ScopeKey,
    timeout: Duration,
) -> ShutdownEntry {
    let id = cap.id().to_owned();
    let outcome = match tokio::time::timeout(timeout, cap.shutdown()).await {
        Ok(Ok(())) => ShutdownOutcome::Clean,
        Ok(Err(e)) => {
            tracing::warn!(capability = %id, "shutdown failed: {e}");
            ShutdownOutcome::Failed(e.to_string())
        }
        Err(_) => {
            tracing::warn!(capability = %id, ?timeout, "shutdown timed out; cancelled");
            ShutdownOutcome::TimedOut
        }
    };
    ShutdownEntry { id, key, outcome }
}

impl ExtensionRegistry {
    /// Unregisters and shuts down everything, innermost level first.
    pub async fn shutdown(&self) -> ShutdownReport {
        self.shutdown_where(|_| true).await
    }

    /// Shuts down what belongs to one session (its turn, agent and session
    /// slots), leaving the pool and other sessions running.
    pub async fn shutdown_session(&self, pool_id: &str, session_id: &str) -> ShutdownReport {
        self.shutdown_where(|k| k.pool_id == pool_id && k.session_id == session_id)
            .await
    }

    /// Shuts down what lives at `scope`'s own level and below it (an
    /// agent's slot and its turns' slots), innermost first, leaving the
    /// levels above and every other branch running.
    pub async fn shutdown_within(&self, scope: &Scope) -> ShutdownReport {
        let level = scope.level();
        self.shutdown_where(|k| {
            k.level >= level
                && k.pool_id == scope.pool_id
                && (level < ScopeLevel::Session || k.session_id == scope.session_id)
                && (level < ScopeLevel::Agent || k.agent_name == scope.agent_name)
                && (level < ScopeLevel::Turn || k.turn_id == scope.turn_id)
        })
        .await
    }

    async fn shutdown_where(&self, select: impl Fn(&ScopeKey) -> bool) -> ShutdownReport {
        let mut slots: Vec<(ScopeKey, Vec<Arc<dyn Capability>>)> = {
            let mut inner = self.inner.write();
            let keys: Vec<ScopeKey> = inner.slots.keys().filter(|k| select(k)).cloned().collect();
            let mut taken = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(slot) = inner.slots.remove(&key) {
                    let caps = slot.ordered.iter().rev().map(|r| r.cap.clone()).collect();
                    taken.push((key, caps));
                }
            }
            for routes in inner.schemes.values_mut() {
                routes.retain(|(k, _)| !select(k));
            }
            inner.schemes.retain(|_, r| !r.is_empty());
            taken
        };
        self.owners.clear();
        for (key, _) in &slots {
            self.watchers.changed(key);
        }
        // Innermost level first; a stable order among slots of one level.
        slots.sort_by(|(a, _), (b, _)| b.level.cmp(&a.level).then_with(|| a.cmp(b)));
        let mut report = ShutdownReport::default();
        for (key, caps) in slots {
            for cap in caps {
                report
                    .entries
                    .push(shutdown_one(cap, key.clone(), self.config.shutdown_timeout).await);
            }
        }
        report
    }
}
