//! [`Reconciler`]: the host's membership provider — discovery sources in,
//! one complete change of the running servers out, per catalog cycle (see
//! the module above for the rules).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use extpool_catalog::{ChangeOutcome, Membership, MembershipChange};
use extpool_core::Capability;
use extpool_mcp::{McpServerCap, McpServerConfig, SessionConnectionPool};
use futures::StreamExt;
use parking_lot::{Mutex, RwLock};

use super::{Discovered, DiscoveredServer, DiscoverySource, DiscoveryStatus, Timing, epoch_ms};
use crate::servers::{ServerEntry, state_of, transport};
use crate::status::{ServerInfo, ServerState};

/// The running servers, configured and discovered, in listing order.
#[derive(Default)]
pub(crate) struct Runtime {
    entries: RwLock<Vec<ServerEntry>>,
}

impl Runtime {
    /// A runtime holding `entries` (the servers started with the host).
    pub(crate) fn new(entries: Vec<ServerEntry>) -> Self {
        Self {
            entries: RwLock::new(entries),
        }
    }

    /// Every server now.
    pub(crate) fn entries(&self) -> Vec<ServerEntry> {
        self.entries.read().clone()
    }

    /// Whether a server of this name (ignoring case) is running or known.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.entries
            .read()
            .iter()
            .any(|e| e.info.name.eq_ignore_ascii_case(name))
    }
}

/// One discovery source and what it last said.
struct Slot {
    source: Arc<dyn DiscoverySource>,
    /// Consult at the next cycle (a file changed, a refresh).
    dirty: AtomicBool,
    st: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// Its last usable answer.
    last: Option<Discovered>,
    /// When a polled source is consulted next.
    due: Option<Instant>,
    backoff: Duration,
    /// Its last consultation failed.
    consult_failed: bool,
    /// The candidate built from its answer failed, and why.
    candidate_error: Option<String>,
    last_success: Option<SystemTime>,
    last_attempt: Option<SystemTime>,
    last_error: Option<(String, SystemTime)>,
    /// Servers of its answer left out because another source has the name.
    clashes: Vec<String>,
}

impl SlotState {
    fn stale(&self) -> bool {
        self.consult_failed || self.candidate_error.is_some()
    }

    fn fail(&mut self, error: String, timing: &Timing) -> Instant {
        let now = Instant::now();
        self.last_error = Some((error, SystemTime::now()));
        let wait = self.backoff.max(timing.backoff_initial);
        self.backoff = (wait * 2).min(timing.backoff_max);
        now + wait
    }
}

/// A server started for a change that was not published yet.
struct Built {
    name: String,
    source: String,
    written: McpServerConfig,
    cap: Arc<McpServerCap>,
    info: ServerInfo,
}

impl Built {
    fn entry(&self) -> ServerEntry {
        ServerEntry {
            info: self.info.clone(),
            cap: Some(self.cap.clone()),
            source: self.source.clone(),
            written: self.written.clone(),
        }
    }
}

/// The runtime a change leads to, waiting for the cycle's outcome.
struct Plan {
    entries: Vec<ServerEntry>,
    retired: Vec<Arc<McpServerCap>>,
    built: Vec<Built>,
}

#[derive(Default)]
struct State {
    /// Started for a change that was not published; reused by the next.
    pending: Vec<Built>,
    plan: Option<Plan>,
    /// No candidate is built before this (backoff after a failure).
    blocked_until: Option<Instant>,
}

/// One server the sources want, and which source names it.
struct Want {
    slot: usize,
    server: DiscoveredServer,
}

/// The host's membership provider.
pub(crate) struct Reconciler {
    slots: Vec<Slot>,
    runtime: Arc<Runtime>,
    pool: SessionConnectionPool,
    timing: Timing,
    state: Mutex<State>,
    retiring: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    shut: AtomicBool,
    /// Counts the changes of the sources' statuses and of the runtime.
    updates: tokio::sync::watch::Sender<u64>,
}

impl Reconciler {
    /// A reconciler over `sources` (precedence order: a name the first
    /// names wins), each with its first answer if it has one (the
    /// configuration read at start), for the servers of `runtime`.
    pub(crate) fn new(
        sources: Vec<(Arc<dyn DiscoverySource>, Option<Discovered>)>,
        runtime: Arc<Runtime>,
        pool: SessionConnectionPool,
        timing: Timing,
    ) -> Self {
        let now = Instant::now();
        let slots = sources
            .into_iter()
            .map(|(source, first)| {
                let st = SlotState {
                    due: source.polled().then_some(now),
                    backoff: timing.backoff_initial,
                    last_success: first.as_ref().map(|_| SystemTime::now()),
                    last: first,
                    ..SlotState::default()
                };
                Slot {
                    source,
                    dirty: AtomicBool::new(false),
                    st: Mutex::new(st),
                }
            })
            .collect();
        Self {
            slots,
            runtime,
            pool,
            timing,
            state: Mutex::new(State::default()),
            retiring: Mutex::new(Vec::new()),
            shut: AtomicBool::new(false),
            updates: tokio::sync::watch::channel(0).0,
        }
    }

    /// Told each time a source was consulted or the running servers
    /// changed (a number that only grows).
    pub(crate) fn updates(&self) -> tokio::sync::watch::Receiver<u64> {
        self.updates.subscribe()
    }

    fn bump(&self) {
        self.updates.send_modify(|n| *n += 1);
    }

    /// Marks source `id` (every source with `None`) to be consulted at the
    /// next cycle.
    pub(crate) fn mark(&self, id: Option<&str>) {
        for slot in &self.slots {
            if id.is_none_or(|id| slot.source.id() == id) {
                slot.dirty.store(true, Ordering::Release);
            }
        }
    }

    /// The cached state of every source (never consults one).
    pub(crate) fn statuses(&self) -> Vec<DiscoveryStatus> {
        let entries = self.runtime.entries();
        let now = Instant::now();
        let blocked = self.state.lock().blocked_until;
        self.slots
            .iter()
            .map(|slot| {
                let st = slot.st.lock();
                let id = slot.source.id();
                let mut notes: Vec<String> = st
                    .last
                    .iter()
                    .flat_map(|d| d.notes.iter().cloned())
                    .collect();
                notes.extend(st.clashes.iter().cloned());
                let next = match (slot.source.polled().then_some(st.due).flatten(), blocked) {
                    (Some(a), Some(b)) if st.candidate_error.is_some() => Some(a.min(b)),
                    (None, Some(b)) if st.candidate_error.is_some() => Some(b),
                    (a, _) => a,
                };
                DiscoveryStatus {
                    source: id.to_owned(),
                    endpoint: slot.source.endpoint(),
                    state: if st.stale() {
                        "stale"
                    } else if st.last.is_none() {
                        "pending"
                    } else {
                        "ok"
                    },
                    stale: st.stale(),
                    last_success_ms: st.last_success.map(epoch_ms),
                    last_attempt_ms: st.last_attempt.map(epoch_ms),
                    last_error: st.last_error.as_ref().map(|(e, _)| e.clone()),
                    last_error_ms: st.last_error.as_ref().map(|(_, t)| epoch_ms(*t)),
                    servers: entries
                        .iter()
                        .filter(|e| e.source == id)
                        .map(|e| e.info.name.clone())
                        .collect(),
                    notes,
                    next_in_ms: next.map(|t| {
                        u64::try_from(t.saturating_duration_since(now).as_millis())
                            .unwrap_or(u64::MAX)
                    }),
                }
            })
            .collect()
    }

    /// Stops retiring in the background (the pool's shutdown closes every
    /// connection) and lets go of servers started for an unpublished change.
    pub(crate) async fn shutdown(&self) {
        self.shut.store(true, Ordering::Release);
        for task in self.retiring.lock().drain(..) {
            task.abort();
        }
        let pending: Vec<Built> = {
            let mut st = self.state.lock();
            let mut all = std::mem::take(&mut st.pending);
            if let Some(plan) = st.plan.take() {
                all.extend(plan.built);
            }
            all
        };
        for built in pending {
            let _ = built.cap.shutdown().await;
        }
    }

    /// Consults every source that is due, a bounded number at once.
    async fn consult_due(&self) {
        let now = Instant::now();
        let due: Vec<usize> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| {
                let dirty = slot.dirty.swap(false, Ordering::AcqRel);
                let polled = slot.source.polled() && slot.st.lock().due.is_some_and(|d| d <= now);
                dirty || polled
            })
            .map(|(i, _)| i)
            .collect();
        if due.is_empty() {
            return;
        }
        let timeout = self.timing.timeout;
        let answers: Vec<_> = futures::stream::iter(due)
            .map(|i| async move {
                let source = &self.slots[i].source;
                let answer = tokio::time::timeout(timeout, source.consult()).await;
                (i, answer)
            })
            .buffer_unordered(self.timing.max_concurrent)
            .collect()
            .await;
        for (i, answer) in answers {
            let slot = &self.slots[i];
            let id = slot.source.id();
            let mut st = slot.st.lock();
            st.last_attempt = Some(SystemTime::now());
            let answer = answer.map_err(|_| {
                format!(
                    "{} did not answer within {} ms",
                    slot.source.endpoint(),
                    timeout.as_millis()
                )
            });
            match answer.and_then(|a| a.map_err(|e| e.to_string())) {
                Ok(found) => {
                    if st.consult_failed {
                        tracing::info!(source = id, "discovery: source answers again");
                    }
                    st.consult_failed = false;
                    st.backoff = self.timing.backoff_initial;
                    st.due = slot.source.polled().then(|| now + self.timing.interval);
                    st.last = Some(found);
                }
                Err(error) => {
                    if st.consult_failed {
                        tracing::debug!(source = id, "discovery: still failing: {error}");
                    } else {
                        tracing::warn!(
                            source = id,
                            "discovery: keeping the last usable servers: {error}"
                        );
                    }
                    st.consult_failed = true;
                    let retry = st.fail(error, &self.timing);
                    st.due = slot.source.polled().then_some(retry);
                }
            }
        }
    }

    /// The servers every source wants, the first source winning a name
    /// (ignoring case); the clashes are noted on the losing source.
    fn desired(&self) -> Vec<Want> {
        let mut taken: HashMap<String, String> = HashMap::new();
        for e in self.runtime.entries() {
            if !self.slots.iter().any(|s| s.source.id() == e.source) {
                taken.insert(e.info.name.to_ascii_lowercase(), e.info.origin.clone());
            }
        }
        let mut wants = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            let mut st = slot.st.lock();
            let mut clashes = Vec::new();
            for server in st.last.iter().flat_map(|d| d.servers.iter()) {
                let folded = server.name.to_ascii_lowercase();
                if let Some(owner) = taken.get(&folded) {
                    clashes.push(format!(
                        "server {:?} left out: the name is taken by {owner}",
                        server.name
                    ));
                    continue;
                }
                taken.insert(folded, format!("{} ({})", server.origin, slot.source.id()));
                wants.push(Want {
                    slot: i,
                    server: server.clone(),
                });
            }
            st.clashes = clashes;
        }
        wants
    }

    /// Marks the sources of the failed servers stale and blocks building
    /// until the longest of their backoffs.
    fn candidate_failed(&self, failures: &[(usize, String)]) {
        let mut until: Option<Instant> = None;
        for (i, error) in failures {
            let slot = &self.slots[*i];
            tracing::warn!(
                source = slot.source.id(),
                "discovery: candidate not published, keeping the last usable servers: {error}"
            );
            let mut st = slot.st.lock();
            st.candidate_error = Some(error.clone());
            let at = st.fail(error.clone(), &self.timing);
            until = Some(until.map_or(at, |u| u.max(at)));
        }
        self.state.lock().blocked_until = until;
    }

    /// The sources whose answer is now the runtime's are up to date.
    fn settled(&self, wants: &[Want]) {
        let now = SystemTime::now();
        for (i, slot) in self.slots.iter().enumerate() {
            let mut st = slot.st.lock();
            if st.last.is_none() || (st.consult_failed && !wants.iter().any(|w| w.slot == i)) {
                continue;
            }
            if st.candidate_error.take().is_some() {
                st.backoff = self.timing.backoff_initial;
            }
            if !st.consult_failed {
                st.last_success = Some(now);
            }
        }
    }

    fn retire(&self, caps: Vec<Arc<McpServerCap>>) {
        let mut tasks = self.retiring.lock();
        tasks.retain(|t| !t.is_finished());
        for cap in caps {
            tracing::info!(server = %cap.name(), "discovery: retiring a replaced or removed server");
            tasks.push(tokio::spawn(super::retire::retire(cap, self.pool.clone())));
        }
    }

    /// Starts the servers of `build`, reusing those started for an earlier
    /// unpublished change; returns them, or the failures by source.
    async fn build(
        &self,
        build: &[&Want],
    ) -> Result<Vec<Built>, (Vec<Built>, Vec<(usize, String)>)> {
        let mut reusable = std::mem::take(&mut self.state.lock().pending);
        let mut built = Vec::new();
        let mut failures = Vec::new();
        let mut to_start = Vec::new();
        for want in build {
            let source = self.slots[want.slot].source.id();
            let s = &want.server;
            if let Some(i) = reusable
                .iter()
                .position(|b| b.name == s.name && b.source == source && b.written == s.written)
            {
                built.push(reusable.swap_remove(i));
                continue;
            }
            match &s.resolved {
                Ok(config) => to_start.push((s.name.clone(), config.clone())),
                Err(why) => failures.push((want.slot, format!("server {:?}: {why}", s.name))),
            }
        }
        // Started for a change nobody wants any more.
        self.retire(reusable.into_iter().map(|b| b.cap).collect());
        for started in extpool_mcp::start_servers(&self.pool, to_start, None).await {
            let Some(want) = build.iter().find(|w| w.server.name == started.server) else {
                continue;
            };
            let state = state_of(&started.status);
            match started.cap {
                Some(cap) => built.push(Built {
                    name: want.server.name.clone(),
                    source: self.slots[want.slot].source.id().to_owned(),
                    written: want.server.written.clone(),
                    info: ServerInfo {
                        name: want.server.name.clone(),
                        origin: want.server.origin.clone(),
                        transport: transport(&want.server.written),
                        state,
                    },
                    cap,
                }),
                None => {
                    let reason = match state {
                        ServerState::Failed { reason } => reason,
                        other => other.word().to_owned(),
                    };
                    failures.push((
                        want.slot,
                        format!("server {:?} did not start: {reason}", want.server.name),
                    ));
                }
            }
        }
        if failures.is_empty() {
            Ok(built)
        } else {
            Err((built, failures))
        }
    }
}

fn disabled_entry(want: &Want, source: &str) -> ServerEntry {
    ServerEntry {
        info: ServerInfo {
            name: want.server.name.clone(),
            origin: want.server.origin.clone(),
            transport: transport(&want.server.written),
            state: ServerState::Disabled,
        },
        cap: None,
        source: source.to_owned(),
        written: want.server.written.clone(),
    }
}

fn same_entries(a: &[ServerEntry], b: &[ServerEntry]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.info.name == y.info.name
                && x.source == y.source
                && x.written == y.written
                && x.info.state == y.info.state
        })
}

#[async_trait]
impl Membership for Reconciler {
    fn next_due(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut next = self.state.lock().blocked_until;
        for slot in &self.slots {
            let at = if slot.dirty.load(Ordering::Acquire) {
                Some(now)
            } else if slot.source.polled() {
                slot.st.lock().due
            } else {
                None
            };
            next = match (next, at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        next
    }

    async fn prepare(&self) -> MembershipChange {
        let change = self.change().await;
        self.bump();
        change
    }

    fn committed(&self, change: &MembershipChange) {
        if change.is_empty() {
            return;
        }
        if let Some(plan) = self.state.lock().plan.as_mut() {
            *self.runtime.entries.write() = std::mem::take(&mut plan.entries);
        }
    }

    async fn finished(&self, change: MembershipChange, outcome: ChangeOutcome) {
        self.conclude(change, outcome);
        self.bump();
    }
}

impl Reconciler {
    /// Consults what is due and builds the change (see [`Membership::prepare`]).
    async fn change(&self) -> MembershipChange {
        if self.shut.load(Ordering::Acquire) {
            return MembershipChange::default();
        }
        self.consult_due().await;
        {
            let mut st = self.state.lock();
            match st.blocked_until {
                Some(until) if Instant::now() < until => return MembershipChange::default(),
                Some(_) => st.blocked_until = None,
                None => {}
            }
        }
        let wants = self.desired();
        let current = self.runtime.entries();
        // Servers of no source here (configured, when the configuration is
        // not reloaded) stay as they are, first.
        let mut entries: Vec<Option<ServerEntry>> = current
            .iter()
            .filter(|e| !self.slots.iter().any(|s| s.source.id() == e.source))
            .cloned()
            .map(Some)
            .collect();
        let fixed = entries.len();
        let mut to_build: Vec<&Want> = Vec::new();
        for want in &wants {
            let source = self.slots[want.slot].source.id();
            let now = current.iter().find(|e| e.info.name == want.server.name);
            match now {
                Some(e) if e.source == source && e.written == want.server.written => {
                    entries.push(Some(e.clone()));
                }
                _ if !want.server.written.enabled => {
                    entries.push(Some(disabled_entry(want, source)))
                }
                _ => {
                    to_build.push(want);
                    entries.push(None);
                }
            }
        }
        let kept = |e: &ServerEntry| {
            entries
                .iter()
                .flatten()
                .any(|k| k.info.name == e.info.name && k.cap.is_some() && same_cap(k, e))
        };
        let retired: Vec<Arc<McpServerCap>> = current
            .iter()
            .filter(|e| !kept(e))
            .filter_map(|e| e.cap.clone())
            .collect();
        if to_build.is_empty() && retired.is_empty() {
            let entries: Vec<ServerEntry> = entries.into_iter().flatten().collect();
            if !same_entries(&entries, &current) {
                *self.runtime.entries.write() = entries;
            }
            self.settled(&wants);
            return MembershipChange::default();
        }
        let built = match self.build(&to_build).await {
            Ok(built) => built,
            Err((built, failures)) => {
                self.state.lock().pending = built;
                self.candidate_failed(&failures);
                return MembershipChange::default();
            }
        };
        let mut planned = Vec::with_capacity(entries.len());
        let mut entries = entries.into_iter();
        planned.extend(entries.by_ref().take(fixed).flatten());
        for (want, entry) in wants.iter().zip(entries) {
            match entry {
                Some(entry) => planned.push(entry),
                None => {
                    if let Some(b) = built.iter().find(|b| b.name == want.server.name) {
                        planned.push(b.entry());
                    }
                }
            }
        }
        let change = MembershipChange {
            add: built
                .iter()
                .map(|b| b.cap.clone() as Arc<dyn Capability>)
                .collect(),
            remove: retired.iter().map(|c| c.name().to_string()).collect(),
            namespaces: built
                .iter()
                .map(|b| (b.name.clone(), b.written.prefix.clone()))
                .collect(),
        };
        tracing::info!(
            added = ?built.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
            removed = ?change.remove,
            "discovery: candidate built"
        );
        self.state.lock().plan = Some(Plan {
            entries: planned,
            retired,
            built,
        });
        change
    }

    /// Applies the outcome of a change (see [`Membership::finished`]).
    fn conclude(&self, change: MembershipChange, outcome: ChangeOutcome) {
        let Some(plan) = self.state.lock().plan.take() else {
            return;
        };
        if change.is_empty() {
            return;
        }
        if outcome.published {
            // The runtime took the plan's entries when the change was committed.
            self.retire(plan.retired);
            let wants = self.desired();
            self.settled(&wants);
            tracing::info!(revision = outcome.revision, "discovery: servers published");
            return;
        }
        let mut failures: Vec<(usize, String)> = Vec::new();
        for (id, error) in &outcome.failed {
            if let Some(b) = plan.built.iter().find(|b| &b.name == id)
                && let Some(i) = self.slots.iter().position(|s| s.source.id() == b.source)
            {
                failures.push((i, format!("server {id:?} could not be listed: {error}")));
            }
        }
        if let Some(refused) = &outcome.refused {
            for b in &plan.built {
                if let Some(i) = self.slots.iter().position(|s| s.source.id() == b.source) {
                    failures.push((i, format!("the change was refused: {refused}")));
                }
            }
        }
        self.state.lock().pending = plan.built;
        if !failures.is_empty() {
            self.candidate_failed(&failures);
        }
    }
}

/// True when `a` and `b` hold the same capability.
fn same_cap(a: &ServerEntry, b: &ServerEntry) -> bool {
    match (&a.cap, &b.cap) {
        (Some(x), Some(y)) => Arc::ptr_eq(x, y),
        _ => false,
    }
}
