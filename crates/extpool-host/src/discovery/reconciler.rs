//! [`Reconciler`]: the host's membership provider — discovery sources in,
//! one complete change of the running servers out, per catalog cycle (see
//! the module above for the rules).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use extpool_catalog::{ChangeOutcome, Membership, MembershipChange, MembershipWaker};
use extpool_core::Capability;
use extpool_mcp::{McpServerCap, McpServerConfig, SessionConnectionPool};
use parking_lot::Mutex;

use super::runtime::{Runtime, disabled_entry, same_cap, same_entries};
use super::slots::{CandidateFailure, Slots, Want};
use super::{Discovered, DiscoverySource, DiscoveryStatus, FailedServer, Timing};
use crate::servers::{ServerEntry, state_of, transport};
use crate::status::{ServerInfo, ServerState};

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

/// How the runtime compares with what the sources want.
struct Diff<'a> {
    /// The runtime after the change, `None` where a server is to be built.
    entries: Vec<Option<ServerEntry>>,
    /// How many leading entries belong to no source (kept as they are).
    fixed: usize,
    to_build: Vec<&'a Want>,
    retired: Vec<Arc<McpServerCap>>,
}

/// The host's membership provider.
pub(crate) struct Reconciler {
    slots: Slots,
    runtime: Arc<Runtime>,
    pool: SessionConnectionPool,
    state: Mutex<State>,
    retiring: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    shut: AtomicBool,
    /// Counts the changes of the sources' statuses and of the runtime.
    updates: tokio::sync::watch::Sender<u64>,
    /// Tells the catalog's loop that a source became due outside a cycle.
    waker: std::sync::OnceLock<MembershipWaker>,
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
        Self {
            slots: Slots::new(sources, timing),
            runtime,
            pool,
            state: Mutex::new(State::default()),
            retiring: Mutex::new(Vec::new()),
            shut: AtomicBool::new(false),
            updates: tokio::sync::watch::channel(0).0,
            waker: std::sync::OnceLock::new(),
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
    /// next cycle, which the catalog's loop is told is due now.
    pub(crate) fn mark(&self, id: Option<&str>) {
        self.slots.mark(id);
        if let Some(waker) = self.waker.get() {
            waker.due_changed();
        }
    }

    /// The cached state of every source (never consults one).
    pub(crate) fn statuses(&self) -> Vec<DiscoveryStatus> {
        let blocked = self.state.lock().blocked_until;
        self.runtime
            .read(|entries| self.slots.statuses(entries, blocked))
    }

    /// The statuses of [`Reconciler::statuses`] and the running servers
    /// they speak of, read together (never one before a change and the
    /// other after it).
    pub(crate) fn snapshot(&self) -> (Vec<DiscoveryStatus>, Vec<ServerEntry>) {
        let blocked = self.state.lock().blocked_until;
        self.runtime
            .read(|entries| (self.slots.statuses(entries, blocked), entries.to_vec()))
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

    fn retire(&self, caps: Vec<Arc<McpServerCap>>) {
        let mut tasks = self.retiring.lock();
        tasks.retain(|t| !t.is_finished());
        for cap in caps {
            tracing::info!(server = %cap.name(), "discovery: retiring a replaced or removed server");
            tasks.push(tokio::spawn(super::retire::retire(cap, self.pool.clone())));
        }
    }

    fn block(&self, failures: &[CandidateFailure]) {
        self.state.lock().blocked_until = self.slots.candidate_failed(failures);
    }

    /// Servers of no source here (configured ones, when the configuration
    /// is not reloaded): they stay as they are.
    fn fixed(&self, current: &[ServerEntry]) -> Vec<ServerEntry> {
        current
            .iter()
            .filter(|e| self.slots.index_of(&e.source).is_none())
            .cloned()
            .collect()
    }

    /// Compares the runtime `current` with `wants`: an unchanged server is
    /// kept, a disabled one listed without a capability, a new or changed
    /// one built, and every capability not kept retired.
    fn diff<'a>(&self, current: &[ServerEntry], wants: &'a [Want]) -> Diff<'a> {
        let mut entries: Vec<Option<ServerEntry>> =
            self.fixed(current).into_iter().map(Some).collect();
        let fixed = entries.len();
        let mut to_build = Vec::new();
        for want in wants {
            let source = self.slots.id(want.slot);
            let running = current.iter().find(|e| e.info.name == want.server.name);
            match running {
                Some(e) if e.source == source && e.written == want.server.written => {
                    entries.push(Some(e.clone()));
                }
                _ if !want.server.written.enabled => {
                    entries.push(Some(disabled_entry(&want.server, source)));
                }
                _ => {
                    to_build.push(want);
                    entries.push(None);
                }
            }
        }
        let kept = |e: &ServerEntry| entries.iter().flatten().any(|k| same_cap(k, e));
        let retired = current
            .iter()
            .filter(|e| !kept(e))
            .filter_map(|e| e.cap.clone())
            .collect();
        Diff {
            entries,
            fixed,
            to_build,
            retired,
        }
    }

    /// Starts the servers of `build`, reusing those started for an earlier
    /// unpublished change; returns them, or the failures by source.
    async fn build(
        &self,
        build: &[&Want],
    ) -> Result<Vec<Built>, (Vec<Built>, Vec<CandidateFailure>)> {
        let mut reusable = std::mem::take(&mut self.state.lock().pending);
        let mut built = Vec::new();
        let mut failures = Vec::new();
        let mut to_start = Vec::new();
        for want in build {
            let source = self.slots.id(want.slot);
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
                Err(why) => {
                    failures.push(failure(want, format!("server {:?}: {why}", s.name), why))
                }
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
                    source: self.slots.id(want.slot).to_owned(),
                    written: want.server.written.clone(),
                    info: ServerInfo {
                        name: want.server.name.clone(),
                        origin: want.server.origin.clone(),
                        transport: transport(&want.server.written),
                        plugin: want.server.plugin.clone(),
                        sandbox: want.server.written.sandbox.clone(),
                        state,
                        implementation: None,
                    },
                    cap,
                }),
                None => {
                    let reason = match state {
                        ServerState::Failed { reason } => reason,
                        other => other.word().to_owned(),
                    };
                    let name = &want.server.name;
                    let message = format!("server {name:?} did not start: {reason}");
                    failures.push(failure(want, message, &reason));
                }
            }
        }
        if failures.is_empty() {
            Ok(built)
        } else {
            Err((built, failures))
        }
    }

    /// Consults what is due and builds the change (see [`Membership::prepare`]).
    async fn change(&self) -> MembershipChange {
        if self.shut.load(Ordering::Acquire) {
            return MembershipChange::default();
        }
        self.slots.consult_due().await;
        {
            let mut st = self.state.lock();
            match st.blocked_until {
                Some(until) if Instant::now() < until => return MembershipChange::default(),
                Some(_) => st.blocked_until = None,
                None => {}
            }
        }
        let current = self.runtime.entries();
        // A session's own server keeps its name against a newcomer; a
        // discovered server already running keeps its name too.
        let held = |name: &str| {
            let running = current
                .iter()
                .any(|e| extpool_core::same_server_name(&e.info.name, name));
            !running && self.runtime.held(name)
        };
        let wants = self.slots.desired(&self.fixed(&current), held);
        let diff = self.diff(&current, &wants);
        if diff.to_build.is_empty() && diff.retired.is_empty() {
            let entries: Vec<ServerEntry> = diff.entries.into_iter().flatten().collect();
            if same_entries(&entries, &current) {
                self.slots.settled();
            } else {
                self.runtime.replace(entries, || self.slots.settled());
            }
            return MembershipChange::default();
        }
        let built = match self.build(&diff.to_build).await {
            Ok(built) => built,
            Err((built, failures)) => {
                self.state.lock().pending = built;
                self.block(&failures);
                return MembershipChange::default();
            }
        };
        let mut planned = Vec::with_capacity(diff.entries.len());
        let mut entries = diff.entries.into_iter();
        planned.extend(entries.by_ref().take(diff.fixed).flatten());
        for (want, entry) in wants.iter().zip(entries) {
            match entry {
                Some(entry) => planned.push(entry),
                None => planned.extend(
                    built
                        .iter()
                        .find(|b| b.name == want.server.name)
                        .map(Built::entry),
                ),
            }
        }
        let change = MembershipChange {
            add: built
                .iter()
                .map(|b| b.cap.clone() as Arc<dyn Capability>)
                .collect(),
            remove: diff.retired.iter().map(|c| c.name().to_string()).collect(),
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
            retired: diff.retired,
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
            // The runtime took the plan's entries, and the sources were
            // settled, when the change was committed.
            self.retire(plan.retired);
            tracing::info!(revision = outcome.revision, "discovery: servers published");
            return;
        }
        let mut failures: Vec<CandidateFailure> = Vec::new();
        for (id, error) in &outcome.failed {
            let Some(b) = plan.built.iter().find(|b| b.name == *id) else {
                continue;
            };
            let Some(slot) = self.slots.index_of(&b.source) else {
                continue;
            };
            let reason = format!("could not be listed: {error}");
            failures.push(CandidateFailure {
                slot,
                message: format!("server {id:?} {reason}"),
                server: Some(FailedServer {
                    name: b.name.clone(),
                    origin: b.info.origin.clone(),
                    reason,
                }),
            });
        }
        if let Some(refused) = &outcome.refused {
            for b in &plan.built {
                let slot = self.slots.index_of(&b.source);
                if let Some(slot) = slot.filter(|i| !failures.iter().any(|f| f.slot == *i)) {
                    failures.push(CandidateFailure {
                        slot,
                        message: format!("the change was refused: {refused}"),
                        server: None,
                    });
                }
            }
        }
        self.state.lock().pending = plan.built;
        if !failures.is_empty() {
            self.block(&failures);
        }
    }
}

/// The failure of `want`'s server, for its source's status.
fn failure(want: &Want, message: String, reason: &str) -> CandidateFailure {
    CandidateFailure {
        slot: want.slot,
        message,
        server: Some(FailedServer {
            name: want.server.name.clone(),
            origin: want.server.origin.clone(),
            reason: reason.to_owned(),
        }),
    }
}

#[async_trait]
impl Membership for Reconciler {
    fn next_due(&self) -> Option<Instant> {
        let blocked = self.state.lock().blocked_until;
        [blocked, self.slots.next_due()].into_iter().flatten().min()
    }

    fn attach(&self, waker: MembershipWaker) {
        let _ = self.waker.set(waker);
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
            // The sources' statuses change with the runtime: no reader
            // sees the new servers beside the failure they replace.
            let entries = std::mem::take(&mut plan.entries);
            self.runtime.replace(entries, || self.slots.settled());
        }
    }

    async fn finished(&self, change: MembershipChange, outcome: ChangeOutcome) {
        self.conclude(change, outcome);
        self.bump();
    }
}
