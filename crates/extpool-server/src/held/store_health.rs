//! The health of this replica's link to the state store, as its last
//! heartbeat found it: what readiness reports, set by the heartbeat.

use parking_lot::Mutex;

/// The health of this replica's link to the state store.
#[derive(Default)]
pub(crate) struct StoreHealth {
    /// The last heartbeat's failure, if it failed.
    failure: Mutex<Option<String>>,
}

impl StoreHealth {
    /// `None` when the last heartbeat reached the store, else why not.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure.lock().clone()
    }

    /// Records the last heartbeat's outcome; the first that reaches the
    /// store after failures says so (the replica is ready again).
    pub(crate) fn set(&self, failure: Option<String>) {
        let recovered = failure.is_none();
        let was = std::mem::replace(&mut *self.failure.lock(), failure);
        if recovered && was.is_some() {
            tracing::info!("the state store answers again: this replica is ready");
        }
    }
}
