//! [`Health`]: which capabilities are degraded — their server stayed
//! unreachable after the client's reconnect — so an agent's next compile
//! leaves their tools out until they recover (RFC lifecycle diagram 6).
//!
//! One owner for the rule: every call through a [`crate::View`] reports its
//! outcome here. A failure that means the server is down
//! ([`extpool_mcp::is_server_down`]: unavailable after reconnect, could not
//! connect, timed out) marks the capability degraded and announces it; a
//! later successful call, or a successful listing of the capability by a
//! catalog after the mark, recovers it. Marks are per capability
//! *instance*: two sessions' servers with the same name are different
//! capabilities, and one going down says nothing about the other.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::SystemTime;

use extpool_catalog::SourceStatus;

use extpool_core::{Capability, ExtensionError};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::broadcast;

/// Buffered health events per subscriber (a slow one loses the oldest).
const EVENT_BUFFER: usize = 256;

/// A capability whose server is down, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Degraded {
    /// The capability (server) id.
    pub capability: String,
    /// The failure that marked it, as the caller saw it
    /// (`MCP server "<name>" unavailable after reconnect: …`).
    pub reason: String,
    /// When it was marked.
    #[serde(skip)]
    pub since: SystemTime,
}

/// A change of a capability's health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "health", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HealthEvent {
    /// Marked degraded: its tools leave the next compiled toolsets.
    Degraded(Degraded),
    /// Usable again: its tools return to the next compiled toolsets.
    Recovered {
        /// The capability id.
        capability: String,
    },
}

struct Entry {
    cap: Weak<dyn Capability>,
    info: Degraded,
}

/// The degraded capabilities of one host (see the module docs).
pub struct Health {
    marks: Mutex<HashMap<usize, Entry>>,
    epoch: AtomicU64,
    events: broadcast::Sender<HealthEvent>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("degraded", &self.marks.lock().len())
            .finish()
    }
}

impl Default for Health {
    fn default() -> Self {
        Self {
            marks: Mutex::new(HashMap::new()),
            epoch: AtomicU64::new(0),
            events: broadcast::channel(EVENT_BUFFER).0,
        }
    }
}

/// The identity of a capability instance.
pub(crate) fn instance(cap: &Arc<dyn Capability>) -> usize {
    Arc::as_ptr(cap).cast::<()>() as usize
}

impl Health {
    /// Records a call's outcome on `cap`: a server-down failure marks it
    /// degraded (returns true when this call marked it), success recovers it.
    pub fn record(&self, cap: &Arc<dyn Capability>, outcome: Result<(), &ExtensionError>) -> bool {
        match outcome {
            Ok(()) => {
                self.recover(cap);
                false
            }
            Err(error) if extpool_mcp::is_server_down(error) => self.mark(cap, error.to_string()),
            Err(_) => false,
        }
    }

    /// Marks `cap` degraded for `reason`; false when it already was.
    pub fn mark(&self, cap: &Arc<dyn Capability>, reason: String) -> bool {
        let info = Degraded {
            capability: cap.id().to_owned(),
            reason,
            since: SystemTime::now(),
        };
        {
            let mut marks = self.marks.lock();
            marks.retain(|_, e| e.cap.strong_count() > 0);
            if marks.contains_key(&instance(cap)) {
                return false;
            }
            marks.insert(
                instance(cap),
                Entry {
                    cap: Arc::downgrade(cap),
                    info: info.clone(),
                },
            );
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
        tracing::warn!(capability = %info.capability, reason = %info.reason, "capability degraded; its tools leave the next compiled toolsets");
        let _ = self.events.send(HealthEvent::Degraded(info));
        true
    }

    /// Clears `cap`'s mark; false when it was not degraded.
    pub fn recover(&self, cap: &Arc<dyn Capability>) -> bool {
        let removed = {
            let mut marks = self.marks.lock();
            let removed = marks.remove(&instance(cap));
            if removed.is_some() {
                self.epoch.fetch_add(1, Ordering::AcqRel);
            }
            removed
        };
        let Some(entry) = removed else {
            return false;
        };
        tracing::info!(capability = %entry.info.capability, "capability recovered");
        let _ = self.events.send(HealthEvent::Recovered {
            capability: entry.info.capability,
        });
        true
    }

    /// Recovers `cap` when `status` shows a successful listing since its
    /// mark (the catalog reached the server again).
    pub fn recover_if_listed(&self, cap: &Arc<dyn Capability>, status: &SourceStatus) -> bool {
        let since = match self.marks.lock().get(&instance(cap)) {
            Some(entry) => entry.info.since,
            None => return false,
        };
        let listed =
            !status.stale && status.available && status.last_success.is_some_and(|at| at >= since);
        listed && self.recover(cap)
    }

    /// Whether `cap` is degraded.
    pub fn is_degraded(&self, cap: &Arc<dyn Capability>) -> bool {
        self.marks.lock().contains_key(&instance(cap))
    }

    /// Every degraded capability still alive, with the capability itself.
    pub fn entries(&self) -> Vec<(Arc<dyn Capability>, Degraded)> {
        self.marks
            .lock()
            .values()
            .filter_map(|e| Some((e.cap.upgrade()?, e.info.clone())))
            .collect()
    }

    /// Every degraded capability, by id.
    pub fn degraded(&self) -> Vec<Degraded> {
        let mut out: Vec<Degraded> = self.entries().into_iter().map(|(_, d)| d).collect();
        out.sort_by(|a, b| a.capability.cmp(&b.capability));
        out
    }

    /// A number that changes whenever a mark is set or cleared (compiled
    /// toolsets are cached by it).
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Health changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<HealthEvent> {
        self.events.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extpool_core::ExtensionError;

    fn cap(id: &str) -> Arc<dyn Capability> {
        extpool_testkit::LocalSource::new(id)
    }

    #[test]
    fn only_server_down_failures_mark_and_success_recovers() {
        let health = Health::default();
        let a = cap("a");
        let mut events = health.subscribe();
        let refused = ExtensionError::Denied("no".into());
        assert!(!health.record(&a, Err(&refused)));
        assert!(!health.is_degraded(&a));
        let down = ExtensionError::Unavailable {
            capability: "a".into(),
            reason: "gone".into(),
        };
        let before = health.epoch();
        assert!(health.record(&a, Err(&down)));
        assert!(!health.record(&a, Err(&down)), "marked once");
        assert!(health.is_degraded(&a));
        assert_ne!(health.epoch(), before);
        assert_eq!(health.degraded()[0].reason, "a unavailable: gone");
        // Another instance with the same id is not affected.
        assert!(!health.is_degraded(&cap("a")));
        health.record(&a, Ok(()));
        assert!(!health.is_degraded(&a));
        assert!(matches!(events.try_recv(), Ok(HealthEvent::Degraded(d)) if d.capability == "a"));
        assert!(
            matches!(events.try_recv(), Ok(HealthEvent::Recovered { capability }) if capability == "a")
        );
    }

    #[test]
    fn a_dropped_capability_is_forgotten() {
        let health = Health::default();
        let a = cap("a");
        health.mark(&a, "down".into());
        drop(a);
        assert!(health.degraded().is_empty());
    }
}
