//! What a caller of the session table holds while it uses a place in it:
//! a slot reserved for a session being made ([`Slot`]), a request or
//! stream in flight ([`Busy`]), a resume under way ([`Resuming`]), a
//! request on its way in to an endpoint ([`Arriving`]). Each gives back
//! what it took when it drops.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::Instant;

use super::{Entry, HeldSession, Key, Live};

/// A reserved slot; given back on drop unless the session was made.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(super) live: Option<Arc<Live>>,
    /// Whose session it is for.
    pub(super) owner: Option<String>,
}

impl Slot {
    /// The session `key` was made (or resumed): it takes the slot.
    pub(crate) fn fill(mut self, key: Key) {
        if let Some(live) = self.live.take() {
            let mut state = live.state.lock();
            state.reserved -= 1;
            state.uncount(&self.owner);
            if !state.sessions.contains_key(&key) {
                let owner = std::mem::take(&mut self.owner);
                state.insert(key, Entry::new(owner));
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            let mut state = live.state.lock();
            state.reserved -= 1;
            state.uncount(&self.owner);
        }
    }
}

/// A request or stream of a session, in flight.
#[derive(Debug)]
pub(crate) struct Busy {
    pub(super) live: Arc<Live>,
    pub(super) key: Key,
    pub(super) id: Option<String>,
    /// The resume of its session under way when it was admitted, if any.
    pub(super) resume: Option<watch::Receiver<()>>,
    /// What answered the session's requests when this was admitted.
    pub(super) session: Option<Arc<dyn HeldSession>>,
}

impl Busy {
    /// What answers the session's requests, if it is an `S`: as it was
    /// when this request was admitted, else (a session resumed since) as
    /// the table holds it now. Taken from the admission, it costs the
    /// table's lock no second time.
    pub(crate) fn session<S: HeldSession>(&mut self) -> Option<Arc<S>> {
        match self.session.take() {
            Some(held) => super::downcast(held),
            None => self.live.session(&self.key),
        }
    }

    /// Waits until the resume of its session that was under way when this
    /// request was admitted is done (at once if there was none), so no
    /// request is answered by a session still being resumed.
    pub(crate) async fn until_resumed(&mut self) {
        if let Some(mut resume) = self.resume.take() {
            // Ends when the resuming request drops its `Resuming`.
            while resume.changed().await.is_ok() {}
        }
    }
}

/// A session being resumed by the request that holds this: requests
/// admitted to it meanwhile wait until this drops.
#[derive(Debug)]
pub(crate) struct Resuming {
    pub(super) live: Arc<Live>,
    pub(super) key: Key,
    /// This resume's mark on the entry.
    pub(super) resuming: watch::Receiver<()>,
    /// Dropped with this: what the waiting requests wait for.
    pub(super) _done: watch::Sender<()>,
}

impl Drop for Resuming {
    fn drop(&mut self) {
        let mut state = self.live.state.lock();
        if let Some(entry) = state.sessions.get_mut(&self.key)
            && entry
                .resuming
                .as_ref()
                .is_some_and(|r| r.same_channel(&self.resuming))
        {
            entry.resuming = None;
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = self.live.state.lock();
        if let Some(entry) = state.sessions.get_mut(&self.key) {
            entry.open = entry.open.saturating_sub(1);
            entry.last = Instant::now();
            if let Some(id) = &self.id {
                entry.ids.remove(id);
            }
        }
    }
}

/// A request on an endpoint, on its way in.
#[derive(Debug)]
pub(crate) struct Arriving {
    /// The table and the endpoint it is counted on (`None`: `/mcp`, not
    /// counted).
    pub(super) counted: Option<(Arc<Live>, String)>,
}

impl Drop for Arriving {
    fn drop(&mut self) {
        let Some((live, endpoint)) = &self.counted else {
            return;
        };
        let mut state = live.state.lock();
        if let Some(n) = state.endpoints.get_mut(endpoint) {
            *n -= 1;
            if *n == 0 {
                state.endpoints.remove(endpoint);
            }
        }
    }
}
