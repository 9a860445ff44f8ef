//! This gateway as one replica among several sharing a state store.
//!
//! Every [`GatewayOptions::replica_heartbeat`] the replica renews its
//! heartbeat (and holds its open sessions again if it had been swept),
//! sweeps replicas silent for three heartbeats (a replica killed without
//! a word: its holds go, and the next replica a client reaches opens the
//! session again), keeps the records of the MCP sessions it holds from
//! expiring, and expires the ones nobody has held for the session
//! keep-alive, and the shared rate buckets that are full again
//! ([`crate::rate`]). Whether the store answered is part of readiness.
//!
//! [`GatewayOptions::replica_heartbeat`]: crate::GatewayOptions::replica_heartbeat

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::Duration;

use extpool_state::ReplicaId;

use crate::shared::Shared;

pub use crate::options::DEFAULT_HEARTBEAT;

/// How many heartbeats a replica may miss before it is swept.
pub const LEASE_BEATS: u32 = 3;

/// A replica id for this process: the host's name (a pod's name under
/// Kubernetes, a container's id under Docker) and a random suffix, so a
/// restarted process is a new replica.
pub fn default_replica_id() -> ReplicaId {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(64)
        .collect();
    let host = if host.is_empty() {
        "extpool".to_owned()
    } else {
        host
    };
    let suffix =
        RandomState::new().hash_one((std::process::id(), std::time::SystemTime::now())) & 0xff_ffff;
    ReplicaId::new(format!("{host}-{suffix:06x}"))
        .unwrap_or_else(|_| ReplicaId::new(format!("extpool-{suffix:06x}")).expect("a valid id"))
}

/// The time between heartbeats asked for, at least 50 ms.
fn beat_every(heartbeat: Duration) -> Duration {
    heartbeat.max(Duration::from_millis(50))
}

/// How long a replica that misses no heartbeat may leave what it holds
/// unmarked ([`LEASE_BEATS`] heartbeats): a record seen within it is one
/// some replica still holds.
pub(crate) fn lease(heartbeat: Duration) -> Duration {
    beat_every(heartbeat) * LEASE_BEATS
}

/// Beats until the gateway stops, then unregisters the replica.
pub(crate) async fn run(shared: Arc<Shared>) {
    let Some(sessions) = &shared.sessions else {
        return;
    };
    let every = beat_every(shared.options.replica_heartbeat);
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = shared.front.stop.cancelled() => return,
        }
        beat(&shared, sessions, every).await;
    }
}

/// One heartbeat: renew, sweep the silent, keep held MCP sessions, expire
/// the abandoned ones and the full rate buckets.
async fn beat(shared: &Shared, sessions: &crate::sessions::Sessions, every: Duration) {
    let store = sessions.store();
    let replica = sessions.replica();
    match store.heartbeat(replica).await {
        Ok(true) => shared.ops.replica_health.set(None),
        Ok(false) => {
            shared.ops.replica_health.set(None);
            tracing::warn!(replica = %replica, "this replica's heartbeats were missed and it was taken for gone; holding its open sessions again");
            sessions.hold_all().await;
        }
        Err(e) => {
            tracing::warn!(replica = %replica, "cannot reach the state store: {e}");
            shared.ops.replica_health.set(Some(e.to_string()));
            return;
        }
    }
    match store.sweep_replicas(lease(every)).await {
        Ok(gone) => {
            for (id, held) in gone {
                tracing::warn!(
                    replica = %id,
                    sessions = held.len(),
                    "replica went away (no heartbeat for {:?}); its sessions open again on whichever replica serves them next",
                    every * LEASE_BEATS
                );
            }
        }
        Err(e) => tracing::warn!("cannot sweep silent replicas: {e}"),
    }
    let held = shared.front.live.own_ids();
    if !held.is_empty()
        && let Err(e) = store.touch_mcp_sessions(&held).await
    {
        tracing::warn!("cannot keep this replica's MCP sessions resumable: {e}");
    }
    if let Err(e) = store.expire_rate_buckets().await {
        tracing::warn!("cannot expire full rate buckets: {e}");
    }
    match store
        .expire_mcp_sessions(record_keep(shared.options.session_idle_timeout))
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::debug!(expired = n, "MCP sessions nobody held expired"),
        Err(e) => tracing::warn!("cannot expire abandoned MCP sessions: {e}"),
    }
}

/// How long a stored MCP session record nobody holds is kept: twice the
/// idle timeout, and at least an hour, so a client that comes back after
/// its session's slot went resumes it.
fn record_keep(idle: std::time::Duration) -> std::time::Duration {
    (idle * 2).max(std::time::Duration::from_secs(3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_ids_are_valid_and_differ() {
        let a = default_replica_id();
        let b = default_replica_id();
        assert_ne!(a, b);
        assert!(a.as_str().len() <= 71, "{a}");
    }
}
