//! Membership events: who is registered in a slot changed.
//!
//! A catalog's reconciliation loop waits on these instead of polling the
//! registry: every registration, unregistration, replacement and shutdown
//! of a slot bumps that slot's counter once the change is visible to
//! readers. Only watched slots have a counter, and a counter lives as long
//! as a [`MembershipWatch`] holds it, so the cost is bounded by the number
//! of watchers, never by the number of slots or changes.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::ScopeKey;

/// The counters of the watched slots.
#[derive(Default)]
pub(crate) struct Watchers {
    senders: Mutex<HashMap<ScopeKey, watch::Sender<u64>>>,
}

impl Watchers {
    /// Tells every watcher of `key` that its members changed. Call it after
    /// the change is visible, so a woken watcher reads the new members.
    pub(crate) fn changed(&self, key: &ScopeKey) {
        if let Some(tx) = self.senders.lock().get(key) {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// A watch of `keys`, each counted from now.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        keys: impl IntoIterator<Item = ScopeKey>,
    ) -> MembershipWatch {
        let mut senders = self.senders.lock();
        let mut watched = Vec::new();
        for key in keys {
            if watched.iter().any(|(k, _)| k == &key) {
                continue;
            }
            let rx = senders
                .entry(key.clone())
                .or_insert_with(|| watch::channel(0).0)
                .subscribe();
            watched.push((key, rx));
        }
        MembershipWatch {
            watched,
            watchers: Arc::downgrade(self),
        }
    }

    /// How many slots have a counter (watched by someone).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.senders.lock().len()
    }
}

/// Wakes when the capabilities registered in any of a set of slots change
/// (from [`crate::ExtensionRegistry::watch_slots`]). A hint, never a copy:
/// read the registry again when it fires. Dropping it forgets the slots
/// nobody else watches.
pub struct MembershipWatch {
    watched: Vec<(ScopeKey, watch::Receiver<u64>)>,
    watchers: Weak<Watchers>,
}

impl std::fmt::Debug for MembershipWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.watched.iter().map(|(k, _)| k.to_string()))
            .finish()
    }
}

impl MembershipWatch {
    /// Waits until a watched slot changes after the last time this returned
    /// or [`MembershipWatch::mark_seen`] was called. Cancel-safe. Never
    /// returns when it watches nothing or the registry is gone.
    pub async fn changed(&mut self) {
        if self.watched.is_empty() {
            return std::future::pending().await;
        }
        let waits = self
            .watched
            .iter_mut()
            .map(|(_, rx)| Box::pin(rx.changed()));
        let (result, _, _) = futures::future::select_all(waits).await;
        if result.is_err() {
            // The registry was dropped: nothing will change any more.
            std::future::pending::<()>().await;
        }
    }

    /// True when a watched slot changed since the last [`Self::changed`] or
    /// [`Self::mark_seen`].
    pub fn has_changed(&self) -> bool {
        self.watched
            .iter()
            .any(|(_, rx)| rx.has_changed().unwrap_or(false))
    }

    /// Takes every change so far as seen: call it right before reading the
    /// registry, so that any change after the read wakes [`Self::changed`].
    pub fn mark_seen(&mut self) {
        for (_, rx) in &mut self.watched {
            rx.borrow_and_update();
        }
    }

    /// The slots watched.
    pub fn slots(&self) -> impl Iterator<Item = &ScopeKey> {
        self.watched.iter().map(|(k, _)| k)
    }
}

impl Drop for MembershipWatch {
    fn drop(&mut self) {
        let Some(watchers) = self.watchers.upgrade() else {
            return;
        };
        let mut senders = watchers.senders.lock();
        for (key, rx) in std::mem::take(&mut self.watched) {
            drop(rx);
            if senders.get(&key).is_some_and(|tx| tx.receiver_count() == 0) {
                senders.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Scope, ScopeLevel};
    use futures::FutureExt;

    fn key(scope: &Scope, level: ScopeLevel) -> ScopeKey {
        scope.key_at(level).unwrap()
    }

    #[test]
    fn a_change_wakes_the_watchers_of_its_slot_only() {
        let watchers = Arc::new(Watchers::default());
        let session = Scope::pool("p").session("s");
        let pool = key(&session, ScopeLevel::Pool);
        let mine = key(&session, ScopeLevel::Session);
        let mut both = watchers.subscribe(session.visible_keys());
        let mut pool_only = watchers.subscribe([pool.clone()]);
        assert!(both.changed().now_or_never().is_none());
        watchers.changed(&mine);
        assert!(both.has_changed() && !pool_only.has_changed());
        assert!(both.changed().now_or_never().is_some());
        assert!(!both.has_changed(), "seen once it returned");
        assert!(pool_only.changed().now_or_never().is_none());
        watchers.changed(&pool);
        both.mark_seen();
        assert!(both.changed().now_or_never().is_none());
        assert!(pool_only.changed().now_or_never().is_some());
    }

    #[test]
    fn a_slot_is_forgotten_when_its_last_watch_is_dropped() {
        let watchers = Arc::new(Watchers::default());
        let session = Scope::pool("p").session("s");
        let a = watchers.subscribe(session.visible_keys());
        let b = watchers.subscribe(Scope::pool("p").visible_keys());
        assert_eq!(watchers.len(), 2);
        drop(a);
        assert_eq!(watchers.len(), 1, "the pool slot is still b's");
        drop(b);
        assert_eq!(watchers.len(), 0);
        // A change nobody watches costs nothing and keeps nothing.
        watchers.changed(&key(&session, ScopeLevel::Session));
        assert_eq!(watchers.len(), 0);
    }

    #[test]
    fn a_watch_of_nothing_or_of_a_dropped_registry_never_fires() {
        let watchers = Arc::new(Watchers::default());
        let mut nothing = watchers.subscribe([]);
        assert!(nothing.changed().now_or_never().is_none());
        let mut orphan = watchers.subscribe(Scope::pool("p").visible_keys());
        drop(watchers);
        assert!(orphan.changed().now_or_never().is_none());
        drop(orphan);
    }
}
