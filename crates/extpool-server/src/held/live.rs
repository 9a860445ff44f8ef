//! The MCP sessions this replica holds in memory, on every endpoint
//! (`/mcp` and each durable session's `/sessions/{id}/mcp`): how many
//! there are against `--max-sessions`, what each is doing, and which end.
//!
//! - A slot is taken before an `initialize` is answered (or a session id it
//!   must resume from the store): at the limit the client is refused at
//!   once, told when the longest-idle session expires, and no session is
//!   made for it. A session id nobody issued takes no slot: it is unknown
//!   whatever the slots (the front end looks for its record first).
//! - A session resumed here is held from the moment its first request is
//!   admitted ([`Live::resume`]), with that request's id, under the same
//!   lock: a request arriving while it runs finds the session held (an id
//!   in use refused), and waits for the resume to be done before it is
//!   answered, so one session is resumed once at a time.
//! - A session is *idle* while it has no request in flight and no stream
//!   open; idle for `--session-idle-timeout`, its slot is freed by the one
//!   reaper. Its stored record stays (twice as long, at least an hour), so its client's
//!   next request resumes it where the store is configured; without one,
//!   the client is told the session is gone (HTTP 404) and starts anew.
//! - Each session's JSON-RPC request ids in flight are known: an id that
//!   is in use is refused at once, so no two requests share a stream.
//! - Requests on an endpoint are counted too, so the reaper never closes a
//!   durable session while one of its requests is on its way in.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

pub(crate) use crate::wire::{MAX_REQUESTS_IN_FLIGHT, too_many_requests};

mod guards;
mod refused;
#[cfg(test)]
mod tests;

pub(crate) use guards::{Arriving, Busy, Resuming, Slot};
pub(crate) use refused::{Full, Refused};

/// What answers a held session's requests, as the table knows it: ended
/// when the table stops holding it. The front end's session is the one
/// kind; the table holds it without naming it (and gives it back by its
/// type, [`Live::session`]), so the hub that owns the table names nothing
/// of the front end and no import circle runs through it.
pub(crate) trait HeldSession: Any + Send + Sync + std::fmt::Debug {
    /// Ends the session: its stream ends, its calls are cancelled.
    fn end(&self);
}

/// `held` as the kind of session it is, if it is an `S`.
fn downcast<S: HeldSession>(held: Arc<dyn HeldSession>) -> Option<Arc<S>> {
    let any: Arc<dyn Any + Send + Sync> = held;
    any.downcast().ok()
}

/// Where a session lives: the endpoint (`""` for `/mcp`, else the durable
/// session's id) and the `Mcp-Session-Id` the front end gave it.
pub(crate) type Key = (String, String);

#[derive(Debug)]
struct Entry {
    /// What answers its requests (the front end's session), once its
    /// `initialize` was answered (or its resume done); dropped with the
    /// entry.
    session: Option<Arc<dyn HeldSession>>,
    /// Requests and streams open now.
    open: usize,
    /// When the last of them ended (or the session began).
    last: Instant,
    /// The JSON text of each request id in flight.
    ids: HashSet<String>,
    /// Whose it is ([`extpool_host::core::Principal::owner`]; `None`: made
    /// without identities).
    owner: Option<String>,
    /// While a request resumes it: closed when that resume is done.
    resuming: Option<watch::Receiver<()>>,
}

impl Entry {
    fn new(owner: Option<String>) -> Self {
        Self {
            session: None,
            open: 0,
            last: Instant::now(),
            ids: HashSet::new(),
            owner,
            resuming: None,
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // Its session ends with it (its stream ends, its calls are
        // cancelled; see the front end).
        if let Some(session) = &self.session {
            session.end();
        }
    }
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<Key, Entry>,
    /// Slots taken for sessions being made or resumed.
    reserved: usize,
    /// Sessions held and slots reserved, per owner (`None`: the gateway's
    /// one caller); an owner with none has no entry.
    owners: HashMap<Option<String>, usize>,
    /// Requests in flight per endpoint, sessions or not.
    endpoints: HashMap<String, usize>,
}

impl State {
    /// Sessions held and slots reserved by `owner`.
    fn of(&self, owner: &Option<String>) -> usize {
        self.owners.get(owner).copied().unwrap_or(0)
    }

    /// Counts one more session or slot of `owner`.
    fn count(&mut self, owner: &Option<String>) {
        *self.owners.entry(owner.clone()).or_default() += 1;
    }

    /// Counts one session or slot of `owner` less.
    fn uncount(&mut self, owner: &Option<String>) {
        if let Some(n) = self.owners.get_mut(owner) {
            *n -= 1;
            if *n == 0 {
                self.owners.remove(owner);
            }
        }
    }

    /// Holds session `key` as `entry` (counted for its owner).
    fn insert(&mut self, key: Key, entry: Entry) {
        self.count(&entry.owner);
        if let Some(old) = self.sessions.insert(key, entry) {
            self.uncount(&old.owner);
        }
    }

    /// Stops holding session `key`.
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let entry = self.sessions.remove(key)?;
        self.uncount(&entry.owner);
        Some(entry)
    }

    /// Stops holding every session `keep` says no to.
    fn retain(&mut self, mut keep: impl FnMut(&Key, &Entry) -> bool) {
        let gone: Vec<Key> = self
            .sessions
            .iter()
            .filter(|(k, e)| !keep(k, e))
            .map(|(k, _)| k.clone())
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }
}

/// The live sessions of this replica.
#[derive(Debug)]
pub(crate) struct Live {
    state: Mutex<State>,
    max: usize,
    /// Most sessions one owner holds.
    per_owner: usize,
    idle: Duration,
    /// Sessions (MCP and durable) ended for being idle, so far.
    expired: tokio::sync::watch::Sender<u64>,
}

impl Live {
    /// At most `max` sessions, `per_owner` of one owner, each kept while
    /// idle for `idle`.
    pub(crate) fn new(max: usize, per_owner: usize, idle: Duration) -> Self {
        Self {
            state: Mutex::new(State::default()),
            max,
            per_owner,
            idle,
            expired: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Counts `n` sessions ended for being idle.
    pub(crate) fn count_expired(&self, n: u64) {
        if n > 0 {
            self.expired.send_modify(|total| *total += n);
        }
    }

    /// The number of sessions ended for being idle, as it changes.
    pub(crate) fn expirations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.expired.subscribe()
    }

    /// Requests in flight on durable session `endpoint`'s endpoint now,
    /// sessions or not (those on `/mcp` are not counted: see
    /// [`Live::arriving`]).
    pub(crate) fn in_flight(&self, endpoint: &str) -> usize {
        self.state
            .lock()
            .endpoints
            .get(endpoint)
            .copied()
            .unwrap_or(0)
    }

    /// The idle timeout.
    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }

    /// Sessions held and slots reserved.
    #[cfg(test)]
    pub(crate) fn taken(&self) -> usize {
        let state = self.state.lock();
        state.sessions.len() + state.reserved
    }

    /// `Err` when every slot is taken in `state`, or `owner` holds as
    /// many as one owner may.
    fn room(&self, state: &State, owner: &Option<String>) -> Result<(), Full> {
        let own = state.of(owner) >= self.per_owner;
        if !own && state.sessions.len() + state.reserved < self.max {
            return Ok(());
        }
        let now = Instant::now();
        let frees_in = state
            .sessions
            .values()
            .filter(|e| e.open == 0 && (!own || e.owner == *owner))
            .map(|e| (e.last + self.idle).saturating_duration_since(now))
            .min();
        Err(Full {
            max: if own { self.per_owner } else { self.max },
            frees_in,
            idle: self.idle,
            own,
        })
    }

    /// Takes a slot for a session of `owner` about to be made.
    pub(crate) fn reserve(self: &Arc<Self>, owner: Option<String>) -> Result<Slot, Full> {
        let mut state = self.state.lock();
        self.room(&state, &owner)?;
        state.reserved += 1;
        state.count(&owner);
        Ok(Slot {
            live: Some(self.clone()),
            owner,
        })
    }

    /// Whether `key` is held here.
    #[cfg(test)]
    pub(crate) fn holds(&self, key: &Key) -> bool {
        self.state.lock().sessions.contains_key(key)
    }

    /// The owner of session `key` if it is held here (`Some(None)`: held,
    /// made without identities).
    pub(crate) fn owner(&self, key: &Key) -> Option<Option<String>> {
        self.state.lock().sessions.get(key).map(|e| e.owner.clone())
    }

    /// Keeps `session` as what answers session `key`'s requests, for as
    /// long as the session is held here.
    pub(crate) fn set_session(&self, key: &Key, session: Arc<dyn HeldSession>) {
        if let Some(entry) = self.state.lock().sessions.get_mut(key) {
            entry.session = Some(session);
        }
    }

    /// The ids of the sessions held here, to keep their records
    /// resumable.
    pub(crate) fn own_ids(&self) -> Vec<String> {
        self.state
            .lock()
            .sessions
            .iter()
            .filter(|(_, e)| e.session.is_some())
            .map(|((_, id), _)| id.clone())
            .collect()
    }

    /// What answers session `key`'s requests, if it is held here and is
    /// an `S` (the front end's sessions are the only kind it holds).
    pub(crate) fn session<S: HeldSession>(&self, key: &Key) -> Option<Arc<S>> {
        let held = self.state.lock().sessions.get(key)?.session.clone()?;
        downcast(held)
    }

    /// Forgets session `key` (its client ended it, or it expired).
    pub(crate) fn forget(&self, key: &Key) {
        self.state.lock().remove(key);
    }

    /// Forgets every session of `endpoint` (its durable session closed
    /// here): they end, and their clients are told they are gone.
    pub(crate) fn forget_endpoint(&self, endpoint: &str) {
        self.state.lock().retain(|(e, _), _| e != endpoint);
    }

    /// Forgets session `key` unless a request or stream of it is open (a
    /// resume that came to nothing, while another request may still make
    /// it).
    pub(crate) fn forget_unused(&self, key: &Key) {
        let mut state = self.state.lock();
        if state.sessions.get(key).is_some_and(|e| e.open == 0) {
            state.remove(key);
        }
    }

    /// Admits a request (`id`: its JSON-RPC id, if it is one) or a stream
    /// to session `key`, held here; the session stays busy until the
    /// returned guard drops. Admitted while another request resumes the
    /// session, it waits for that ([`Busy::until_resumed`]) before it is
    /// answered.
    pub(crate) fn admit(self: &Arc<Self>, key: &Key, id: Option<&str>) -> Result<Busy, Refused> {
        self.admit_in(&mut self.state.lock(), key, id)
    }

    /// Admits a request (`id`, as [`Live::admit`]) to session `key`, of
    /// `owner`, resumed here if it is not held: then it takes a slot
    /// (`Refused::Full` at the limit) and the session is held from now
    /// on, with this request's id in flight; the [`Resuming`] returned
    /// marks the resume, which requests admitted meanwhile wait for until
    /// it drops (drop it once the session is resumed, or failed to be).
    /// Held already (another request resumed it meanwhile): admitted as
    /// [`Live::admit`] does, no [`Resuming`].
    pub(crate) fn resume(
        self: &Arc<Self>,
        key: &Key,
        owner: Option<String>,
        id: Option<&str>,
    ) -> Result<(Busy, Option<Resuming>), Refused> {
        let mut state = self.state.lock();
        if state.sessions.contains_key(key) {
            return Ok((self.admit_in(&mut state, key, id)?, None));
        }
        self.room(&state, &owner).map_err(Refused::Full)?;
        let (done, resuming) = watch::channel(());
        let mut entry = Entry::new(owner);
        entry.resuming = Some(resuming.clone());
        state.insert(key.clone(), entry);
        let mut busy = self.admit_in(&mut state, key, id)?;
        // The resuming request itself waits for nothing.
        busy.resume = None;
        Ok((
            busy,
            Some(Resuming {
                live: self.clone(),
                key: key.clone(),
                resuming,
                _done: done,
            }),
        ))
    }

    /// [`Live::admit`] under the lock.
    fn admit_in(
        self: &Arc<Self>,
        state: &mut State,
        key: &Key,
        id: Option<&str>,
    ) -> Result<Busy, Refused> {
        let Some(entry) = state.sessions.get_mut(key) else {
            return Err(Refused::NotHeld);
        };
        if let Some(id) = id {
            if entry.ids.contains(id) {
                return Err(Refused::DuplicateId);
            }
            if entry.ids.len() >= MAX_REQUESTS_IN_FLIGHT {
                return Err(Refused::TooMany);
            }
            entry.ids.insert(id.to_owned());
        }
        entry.open += 1;
        Ok(Busy {
            live: self.clone(),
            key: key.clone(),
            id: id.map(str::to_owned),
            resume: entry.resuming.clone(),
            session: entry.session.clone(),
        })
    }

    /// Counts a request on `endpoint` until the guard drops. Requests on
    /// `/mcp` (`""`) are not counted: what the count is for — an idle
    /// durable session's endpoint closed, its requests shown — concerns
    /// durable sessions' endpoints only, and `/mcp` takes every request
    /// that is not theirs, which need not take the table's lock for it.
    pub(crate) fn arriving(self: &Arc<Self>, endpoint: &str) -> Arriving {
        if endpoint.is_empty() {
            return Arriving { counted: None };
        }
        *self
            .state
            .lock()
            .endpoints
            .entry(endpoint.to_owned())
            .or_default() += 1;
        Arriving {
            counted: Some((self.clone(), endpoint.to_owned())),
        }
    }

    /// Whether `endpoint` has no session held and no request in flight:
    /// then `then` runs, under the same lock (so no request slips in
    /// between the check and what `then` removes).
    pub(crate) fn if_endpoint_idle(&self, endpoint: &str, then: impl FnOnce()) -> bool {
        let state = self.state.lock();
        let busy = state.endpoints.get(endpoint).is_some_and(|n| *n > 0)
            || state.sessions.keys().any(|(e, _)| e == endpoint);
        if !busy {
            then();
        }
        !busy
    }

    /// Removes and returns the sessions idle for the timeout at `now`.
    pub(crate) fn expire(&self, now: Instant) -> Vec<Key> {
        let mut state = self.state.lock();
        let idle = self.idle;
        let expired: Vec<Key> = state
            .sessions
            .iter()
            .filter(|(_, e)| e.open == 0 && now.saturating_duration_since(e.last) >= idle)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &expired {
            state.remove(key);
        }
        expired
    }
}
