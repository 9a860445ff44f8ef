//! The MCP sessions this replica holds in memory, on every endpoint
//! (`/mcp` and each durable session's `/sessions/{id}/mcp`): how many
//! there are against `--max-sessions`, what each is doing, and which end.
//!
//! - A slot is taken before an `initialize` is answered (or a session id it
//!   must resume from the store): at the limit the client is refused at
//!   once, told when the longest-idle session expires, and no session is
//!   made for it. A session id nobody issued takes no slot: it is unknown
//!   whatever the slots ([`crate::front`] looks for its record first).
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

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

pub(crate) use crate::wire::{MAX_REQUESTS_IN_FLIGHT, too_many_requests};

/// Where a session lives: the endpoint (`""` for `/mcp`, else the durable
/// session's id) and the `Mcp-Session-Id` the front end gave it.
pub(crate) type Key = (String, String);

#[derive(Debug)]
struct Entry {
    /// What answers its requests ([`crate::front::Session`]), once its
    /// `initialize` was answered (or its resume done); dropped with the
    /// entry.
    session: Option<Arc<crate::front::Session>>,
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
        // cancelled; crate::front).
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

/// Why a session could not be given a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Full {
    /// The limit.
    pub max: usize,
    /// When the longest-idle session (of the caller, when `own`) expires,
    /// if any is idle.
    pub frees_in: Option<Duration>,
    /// The idle timeout.
    pub idle: Duration,
    /// Whether the caller holds as many as one caller may
    /// (`--sessions-per-principal`); else the gateway is full
    /// (`--max-sessions`).
    pub own: bool,
}

impl Full {
    /// The message a refused client reads.
    pub(crate) fn message(&self) -> String {
        let when = match self.frees_in {
            Some(d) => format!(
                "the longest-idle one expires in {} s (--session-idle-timeout {}); retry then",
                d.as_secs().max(1),
                self.idle.as_secs()
            ),
            None => format!(
                "every one has a request or stream open; a session expires {} s after its last request ends (--session-idle-timeout)",
                self.idle.as_secs()
            ),
        };
        if self.own {
            return format!(
                "you hold {} MCP sessions on this extpool gateway, the most one caller may (gateway.limits.sessions_per_principal, extpool serve --sessions-per-principal): end one you no longer use (HTTP DELETE with its Mcp-Session-Id), or {when}",
                self.max
            );
        }
        format!(
            "this extpool gateway holds at most {} MCP sessions at once (extpool serve --max-sessions) and all are taken: {when}",
            self.max
        )
    }

    /// The HTTP status of the refusal: 429 when the caller holds its most
    /// (it may end one of its own), 503 when the gateway is full.
    pub(crate) fn status(&self) -> u16 {
        if self.own { 429 } else { 503 }
    }

    /// Seconds for a `Retry-After` header.
    pub(crate) fn retry_after(&self) -> u64 {
        self.frees_in
            .map_or(self.idle.as_secs(), |d| d.as_secs())
            .max(1)
    }
}

/// Why a request was not admitted to its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its id is already in flight on the session.
    DuplicateId,
    /// The session has [`MAX_REQUESTS_IN_FLIGHT`] requests open.
    TooMany,
    /// The session is not held here (unknown, or made elsewhere).
    NotHeld,
    /// The session is not held here and every slot is taken.
    Full(Full),
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

    /// Requests in flight on `endpoint` now (`""`: `/mcp`; else a
    /// durable session's id), sessions or not.
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
    pub(crate) fn set_session(&self, key: &Key, session: Arc<crate::front::Session>) {
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

    /// What answers session `key`'s requests, if it is held here.
    pub(crate) fn session(&self, key: &Key) -> Option<Arc<crate::front::Session>> {
        self.state.lock().sessions.get(key)?.session.clone()
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
        })
    }

    /// Counts a request on `endpoint` until the guard drops.
    pub(crate) fn arriving(self: &Arc<Self>, endpoint: &str) -> Arriving {
        *self
            .state
            .lock()
            .endpoints
            .entry(endpoint.to_owned())
            .or_default() += 1;
        Arriving {
            live: self.clone(),
            endpoint: endpoint.to_owned(),
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

/// A reserved slot; given back on drop unless the session was made.
#[derive(Debug)]
pub(crate) struct Slot {
    live: Option<Arc<Live>>,
    /// Whose session it is for.
    owner: Option<String>,
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
    live: Arc<Live>,
    key: Key,
    id: Option<String>,
    /// The resume of its session under way when it was admitted, if any.
    resume: Option<watch::Receiver<()>>,
}

impl Busy {
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
    live: Arc<Live>,
    key: Key,
    /// This resume's mark on the entry.
    resuming: watch::Receiver<()>,
    /// Dropped with this: what the waiting requests wait for.
    _done: watch::Sender<()>,
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
    live: Arc<Live>,
    endpoint: String,
}

impl Drop for Arriving {
    fn drop(&mut self) {
        let mut state = self.live.state.lock();
        if let Some(n) = state.endpoints.get_mut(&self.endpoint) {
            *n -= 1;
            if *n == 0 {
                state.endpoints.remove(&self.endpoint);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> Key {
        (String::new(), id.to_owned())
    }

    #[tokio::test(start_paused = true)]
    async fn slots_are_bounded_and_the_refusal_says_when_one_frees() {
        let live = Arc::new(Live::new(2, 2, Duration::from_secs(60)));
        live.reserve(None).unwrap().fill(key("a"));
        tokio::time::advance(Duration::from_secs(10)).await;
        let b = live.reserve(None).unwrap();
        let full = live.reserve(None).unwrap_err();
        assert_eq!(full.frees_in, Some(Duration::from_secs(50)), "{full:?}");
        assert!(
            full.message().contains("expires in 50 s"),
            "{}",
            full.message()
        );
        assert_eq!(full.retry_after(), 50);
        drop(b);
        assert_eq!(live.taken(), 1, "an unfilled slot is given back");
        let _again = live.reserve(None).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_session_never_expires_and_an_idle_one_does() {
        let live = Arc::new(Live::new(8, 8, Duration::from_secs(60)));
        live.reserve(None).unwrap().fill(key("busy"));
        live.reserve(None).unwrap().fill(key("idle"));
        let stream = live.admit(&key("busy"), None).unwrap();
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(live.expire(Instant::now()), vec![key("idle")]);
        let full = Live::new(1, 1, Duration::from_secs(60));
        let full = Arc::new(full);
        full.reserve(None).unwrap().fill(key("x"));
        let _busy = full.admit(&key("x"), None).unwrap();
        assert_eq!(full.reserve(None).unwrap_err().frees_in, None);
        drop(stream);
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(live.expire(Instant::now()).is_empty());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(live.expire(Instant::now()), vec![key("busy")]);
        assert_eq!(live.taken(), 0);
    }

    #[test]
    fn a_request_id_in_flight_is_refused_until_it_ends() {
        let live = Arc::new(Live::new(8, 8, Duration::from_secs(60)));
        assert_eq!(
            live.admit(&key("s"), Some("1")).unwrap_err(),
            Refused::NotHeld
        );
        live.reserve(None).unwrap().fill(key("s"));
        live.reserve(None).unwrap().fill(key("t"));
        let first = live.admit(&key("s"), Some("1")).unwrap();
        assert_eq!(
            live.admit(&key("s"), Some("1")).unwrap_err(),
            Refused::DuplicateId
        );
        let _other_session = live.admit(&key("t"), Some("1")).unwrap();
        let _other_id = live.admit(&key("s"), Some("\"1\"")).unwrap();
        drop(first);
        let _again = live.admit(&key("s"), Some("1")).unwrap();
    }

    #[tokio::test]
    async fn a_resumed_session_holds_its_first_requests_id_and_resumes_once() {
        let live = Arc::new(Live::new(2, 2, Duration::from_secs(60)));
        let (first, resuming) = live
            .resume(&key("r"), Some("alice".into()), Some("42"))
            .unwrap();
        let resuming = resuming.expect("not held: this request resumes it");
        assert_eq!(live.owner(&key("r")), Some(Some("alice".into())));
        // While it runs, its id is in use, and another resume finds the
        // session held: admitted (no second slot), to wait for the first.
        assert_eq!(
            live.admit(&key("r"), Some("42")).unwrap_err(),
            Refused::DuplicateId
        );
        assert_eq!(
            live.resume(&key("r"), None, Some("42")).unwrap_err(),
            Refused::DuplicateId
        );
        let (mut other, again) = live.resume(&key("r"), None, Some("43")).unwrap();
        assert!(again.is_none(), "one resume at a time");
        assert_eq!(live.taken(), 1);
        {
            let mut waiting = std::pin::pin!(other.until_resumed());
            assert!(
                futures::poll!(waiting.as_mut()).is_pending(),
                "waits for the resume"
            );
            drop(resuming);
            waiting.await;
        }
        drop(other);
        drop(first);
        let _reused = live.admit(&key("r"), Some("42")).unwrap();
        let mut plain = live.admit(&key("r"), Some("44")).unwrap();
        plain.until_resumed().await;
    }

    #[test]
    fn a_resume_at_the_limit_is_refused_and_one_that_came_to_nothing_is_forgotten() {
        let live = Arc::new(Live::new(1, 1, Duration::from_secs(60)));
        let (busy, resuming) = live.resume(&key("a"), None, None).unwrap();
        assert!(matches!(
            live.resume(&key("b"), None, Some("1")).unwrap_err(),
            Refused::Full(Full { max: 1, .. })
        ));
        let other = live.admit(&key("a"), Some("2")).unwrap();
        drop(resuming);
        drop(busy);
        live.forget_unused(&key("a"));
        assert!(live.holds(&key("a")), "a request of it is still open");
        drop(other);
        live.forget_unused(&key("a"));
        assert!(!live.holds(&key("a")));
        assert_eq!(live.taken(), 0);
    }

    #[test]
    fn an_endpoint_with_a_request_on_its_way_is_not_idle() {
        let live = Arc::new(Live::new(8, 8, Duration::from_secs(60)));
        let arriving = live.arriving("d1");
        assert!(!live.if_endpoint_idle("d1", || panic!("busy")));
        drop(arriving);
        let mut ran = false;
        assert!(live.if_endpoint_idle("d1", || ran = true));
        assert!(ran);
        live.reserve(None).unwrap().fill(("d1".into(), "m".into()));
        assert!(!live.if_endpoint_idle("d1", || panic!("held")));
    }

    #[tokio::test(start_paused = true)]
    async fn one_owner_holds_at_most_its_share_and_is_told_when_one_of_its_own_frees() {
        let live = Arc::new(Live::new(8, 2, Duration::from_secs(60)));
        let alice = || Some("alice".to_owned());
        live.reserve(alice()).unwrap().fill(key("a1"));
        tokio::time::advance(Duration::from_secs(10)).await;
        live.reserve(None).unwrap().fill(key("local"));
        let pending = live.reserve(alice()).unwrap();
        let full = live.reserve(alice()).unwrap_err();
        assert!(full.own && full.max == 2, "{full:?}");
        assert_eq!(full.status(), 429);
        assert_eq!(full.frees_in, Some(Duration::from_secs(50)), "{full:?}");
        assert!(
            full.message().contains("the most one caller may"),
            "{}",
            full.message()
        );
        // Others are not held back by her.
        live.reserve(Some("bob".into())).unwrap().fill(key("b1"));
        // A slot given back, a session ended, a resume: counted as hers.
        drop(pending);
        live.reserve(alice()).unwrap().fill(key("a2"));
        assert!(live.reserve(alice()).unwrap_err().own);
        live.forget(&key("a1"));
        let (busy, resuming) = live.resume(&key("a3"), alice(), None).unwrap();
        assert!(matches!(
            live.resume(&key("a4"), alice(), None),
            Err(Refused::Full(Full { own: true, .. }))
        ));
        drop((busy, resuming));
        live.forget_endpoint("");
        assert_eq!(live.taken(), 0);
        assert!(live.state.lock().owners.is_empty());
        // The gateway's own limit is said as such.
        let small = Arc::new(Live::new(1, 1, Duration::from_secs(60)));
        small.reserve(alice()).unwrap().fill(key("x"));
        let full = small.reserve(None).unwrap_err();
        assert!(!full.own && full.status() == 503, "{full:?}");
    }
}
