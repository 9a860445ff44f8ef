//! The gateway's table of callers' logins to their own servers in
//! progress: each login's place within the bounds (at most
//! [`MAX_PENDING_PER_CALLER`] waiting for one caller, [`MAX_PENDING`] for
//! every caller together), the logins waiting for their browser's return
//! by their `state`, and how each (caller, server)'s login stands, as it
//! changes. The flow that fills it is the login module's.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{oneshot, watch};

/// Most logins waiting for their browser at once (every caller together).
pub(crate) const MAX_PENDING: usize = 256;
/// Most logins one caller has waiting at once (each for another server).
pub(crate) const MAX_PENDING_PER_CALLER: usize = 4;
/// Most (caller, server) login statuses kept; past it, the finished ones
/// are forgotten (a caller asking again is told `none`).
const MAX_STATUSES: usize = 4096;
/// A login's caller (its owner key) and server.
pub(crate) type Key = (String, String);

/// How one caller's login to one server stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub(crate) enum LoginStatus {
    /// No login was started here (or one is starting).
    None,
    /// Waiting for the browser at `authorization_url` (the gateway's
    /// login page).
    Pending {
        /// Where the caller's browser goes.
        authorization_url: String,
    },
    /// The grant is stored.
    Done,
    /// It failed, and why.
    Failed {
        /// The error, whole.
        error: String,
    },
}

/// One login waiting for its caller's browser, by its `state`.
pub(crate) struct Waiting {
    /// Whose login, to which server.
    pub key: Key,
    /// Who will be logged in, as the login page names it.
    pub who: String,
    /// The identity provider's authorization URL (the page's button leads
    /// there).
    pub authorization_url: String,
    /// Whether the gateway is reached over https (the cookie is `Secure`).
    pub secure: bool,
    /// SHA-256 of the cookie of the browser that confirmed the login last;
    /// none until one did.
    pub bound: Option<[u8; 32]>,
    /// Where the browser's return goes: the redirect URL, or why the
    /// login ends without it.
    pub redirect: oneshot::Sender<Result<String, String>>,
}

/// The gateway's logins in progress.
#[derive(Default)]
pub(crate) struct Logins {
    /// The servers each caller has a login starting or waiting for.
    reserved: Mutex<HashMap<String, Vec<String>>>,
    /// Redirects awaited, by their `state`.
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Each (caller, server)'s login, as it changes.
    status: Mutex<HashMap<Key, watch::Sender<LoginStatus>>>,
}

/// What [`Logins::reserve`] found.
pub(crate) enum Reserved {
    /// A new login may start: the reservation ends when it is dropped.
    New(Reservation),
    /// The caller has a login to this server starting or waiting already.
    Existing,
    /// A bound is reached (the refusal, in words).
    Full(String),
}

/// A caller's login to one server, from its start to its end.
pub(crate) struct Reservation {
    logins: Arc<Logins>,
    key: Key,
}

impl Reservation {
    /// Ends the login with `status`: its outcome is told and its place
    /// freed at once (whoever sees the outcome may start another).
    pub(crate) fn finish(self, status: LoginStatus) {
        let mut reserved = self.logins.reserved.lock();
        release(&mut reserved, &self.key);
        self.logins.set(&self.key, status);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        release(&mut self.logins.reserved.lock(), &self.key);
    }
}

/// Frees `key`'s place among the reserved logins (if it still has one).
fn release(reserved: &mut HashMap<String, Vec<String>>, key: &Key) {
    if let Some(servers) = reserved.get_mut(&key.0) {
        servers.retain(|s| *s != key.1);
        if servers.is_empty() {
            reserved.remove(&key.0);
        }
    }
}

impl Logins {
    /// The status of `key`, made `none` when there is none (within the
    /// bound).
    fn entry<T>(&self, key: &Key, with: impl FnOnce(&watch::Sender<LoginStatus>) -> T) -> T {
        let mut status = self.status.lock();
        if !status.contains_key(key) && status.len() >= MAX_STATUSES {
            status.retain(|_, s| matches!(*s.borrow(), LoginStatus::Pending { .. }));
        }
        let sender = status
            .entry(key.clone())
            .or_insert_with(|| watch::Sender::new(LoginStatus::None));
        with(sender)
    }

    /// How `key`'s login stands, as it changes.
    pub(crate) fn status_of(&self, key: &Key) -> watch::Receiver<LoginStatus> {
        self.entry(key, watch::Sender::subscribe)
    }

    /// Tells `key`'s login's watchers that it stands at `status`.
    pub(crate) fn set(&self, key: &Key, status: LoginStatus) {
        self.entry(key, |sender| {
            sender.send_replace(status);
        });
    }

    /// Reserves `key`'s login within the bounds; a new one's status is
    /// `none` until it has its URL (an earlier login's outcome is no
    /// longer its news).
    pub(crate) fn reserve(self: &Arc<Self>, key: &Key) -> Reserved {
        let mut reserved = self.reserved.lock();
        let (caller, server) = key;
        let mine = reserved.get(caller).map_or(&[][..], Vec::as_slice);
        if mine.contains(server) {
            return Reserved::Existing;
        }
        if mine.len() >= MAX_PENDING_PER_CALLER {
            return Reserved::Full(format!(
                "{MAX_PENDING_PER_CALLER} of your logins already wait for your browser ({}); finish or wait for one of them",
                mine.join(", ")
            ));
        }
        if reserved.values().map(Vec::len).sum::<usize>() >= MAX_PENDING {
            return Reserved::Full(format!(
                "{MAX_PENDING} logins already wait for their browsers; try again later"
            ));
        }
        reserved
            .entry(caller.clone())
            .or_default()
            .push(server.clone());
        self.set(key, LoginStatus::None);
        Reserved::New(Reservation {
            logins: self.clone(),
            key: key.clone(),
        })
    }

    /// Keeps `waiting` as the login waiting for its browser's return with
    /// `state`.
    pub(crate) fn wait(&self, state: String, waiting: Waiting) {
        self.waiting.lock().insert(state, waiting);
    }

    /// Takes the login waiting for `state`, if any.
    pub(crate) fn take(&self, state: &str) -> Option<Waiting> {
        self.waiting.lock().remove(state)
    }

    /// Runs `with` on the login waiting for `state`, if any.
    pub(crate) fn with_waiting<T>(
        &self,
        state: &str,
        with: impl FnOnce(&mut Waiting) -> T,
    ) -> Option<T> {
        self.waiting.lock().get_mut(state).map(with)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statuses_stay_bounded_and_keep_the_logins_still_waiting() {
        let logins = Logins::default();
        let key = |i: usize| (format!("caller-{i}"), "server".to_owned());
        let waiting = LoginStatus::Pending {
            authorization_url: "https://as.example/authorize".to_owned(),
        };
        logins.set(&key(0), waiting.clone());
        for i in 1..MAX_STATUSES * 2 {
            logins.set(&key(i), LoginStatus::Done);
            assert!(logins.status.lock().len() <= MAX_STATUSES);
        }
        assert_eq!(*logins.status_of(&key(0)).borrow(), waiting);
        assert_eq!(
            *logins.status_of(&key(MAX_STATUSES * 2 - 1)).borrow(),
            LoginStatus::Done
        );
    }
}
