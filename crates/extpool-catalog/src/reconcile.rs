//! The one bounded reconciliation loop of a catalog.
//!
//! Triggers — a `list_changed` (or skill watcher) [`ChangeEvent`] from a
//! current source, an explicit request (config reload), a change in the
//! registry's membership (polled locally), a scheduled retry — only mark
//! the catalog dirty. The loop then waits a short coalescing window, so a
//! burst of notifications costs one cycle, and runs one cycle at a time:
//! list every visible source (bounded concurrency, a timeout per source),
//! and only when *all* succeed build a complete candidate and publish it
//! with one atomic swap. When any source fails, the published revision
//! stays, the failing sources are marked stale with their error, and a
//! retry is scheduled with exponential backoff.
//!
//! Each source's change stream is tagged with a generation; when a
//! capability is replaced (a new runtime under the same id) or removed, its
//! old subscription is dropped and late events carrying the old generation
//! are counted and ignored.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use extpool_core::{Capability, CapabilityKind, ExtensionRegistry, Scope};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::config::ReconcileConfig;
use crate::membership::{ChangeOutcome, Commit, Membership, MembershipChange, with_change};
use crate::revision::{self, CatalogRevision, SourceListing, same_capability};
use crate::services::Services;
use crate::status::{CatalogStatus, ReconcileState, SourceError, SourceStatus};

/// Queue between the change-stream tasks and the loop.
const EVENT_QUEUE: usize = 1024;

/// State shared by the catalog handle and its loop.
pub(crate) struct Shared {
    pub(crate) services: Arc<Services>,
    pub(crate) config: ReconcileConfig,
    pub(crate) current: ArcSwap<CatalogRevision>,
    pub(crate) revisions: watch::Sender<u64>,
    pub(crate) cycles: watch::Sender<u64>,
    pub(crate) wake: Notify,
    /// Tickets handed out by `reconcile_now`; a cycle serves every ticket
    /// taken before it started listing.
    pub(crate) requested: AtomicU64,
    /// The outcome of the latest cycle and the last ticket it served.
    pub(crate) served: watch::Sender<CycleOutcome>,
    pub(crate) cancel: CancellationToken,
    table: Mutex<Table>,
    reconciliations: AtomicU64,
    failures: AtomicU64,
    events: AtomicU64,
    ignored: AtomicU64,
}

#[derive(Default)]
struct Table {
    state: Option<LoopState>,
    last_reconcile: Option<SystemTime>,
    sources: Vec<SourceStatus>,
    /// Every source of the last cycle, listed or not.
    members: Vec<Arc<dyn Capability>>,
}

#[derive(Clone, Copy)]
enum LoopState {
    Idle,
    Pending,
    Reconciling,
    Retry(Instant),
    Stopped,
}

impl Shared {
    pub(crate) fn new(services: Arc<Services>, config: ReconcileConfig) -> Self {
        let empty = Arc::new(CatalogRevision::empty(services.clone()));
        Self {
            services,
            config,
            current: ArcSwap::new(empty),
            revisions: watch::channel(0).0,
            cycles: watch::channel(0).0,
            wake: Notify::new(),
            requested: AtomicU64::new(0),
            served: watch::channel(CycleOutcome::default()).0,
            cancel: CancellationToken::new(),
            table: Mutex::new(Table::default()),
            reconciliations: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            events: AtomicU64::new(0),
            ignored: AtomicU64::new(0),
        }
    }

    /// Marks the loop as started before its task first runs, so that
    /// `settled()` waits for the first cycle.
    pub(crate) fn mark_started(&self) {
        self.set_state(LoopState::Pending);
    }

    fn set_state(&self, state: LoopState) {
        self.table.lock().state = Some(state);
    }

    /// The cached status; never touches a source.
    pub(crate) fn status(&self) -> CatalogStatus {
        let table = self.table.lock();
        let state = match table.state {
            None => ReconcileState::NotStarted,
            Some(LoopState::Idle) => ReconcileState::Idle,
            Some(LoopState::Pending) => ReconcileState::Pending,
            Some(LoopState::Reconciling) => ReconcileState::Reconciling,
            Some(LoopState::Retry(at)) => ReconcileState::RetryScheduled {
                in_ms: at.saturating_duration_since(Instant::now()).as_millis() as u64,
            },
            Some(LoopState::Stopped) => ReconcileState::Stopped,
        };
        CatalogStatus {
            revision: self.current.load().number(),
            state,
            reconciliations: self.reconciliations.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            events: self.events.load(Ordering::Relaxed),
            ignored_events: self.ignored.load(Ordering::Relaxed),
            last_reconcile: table.last_reconcile,
            sources: table.sources.clone(),
        }
    }
}

/// What one reconciliation cycle did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CycleOutcome {
    /// The last `reconcile_now` ticket this cycle served (internal ordering).
    pub(crate) ticket: u64,
    /// The revision published after the cycle (unchanged when it failed or
    /// found nothing new).
    pub revision: u64,
    /// True when the cycle published a new revision.
    pub changed: bool,
    /// True when every required source was listed (false: the previous
    /// revision stays and the failing sources are marked stale).
    pub ok: bool,
    /// True when optional sources (skill-embedded servers) failed and were
    /// left out of the published revision.
    pub degraded: bool,
}

/// One live change-stream subscription.
struct Subscription {
    generation: u64,
    capability: Arc<dyn Capability>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One source of a cycle: a capability, and whether it is optional.
///
/// Capabilities registered in the registry are required: publication is
/// all-or-nothing over them. A capability reached only as another's child
/// (a skill-embedded server) is optional: when it cannot be listed, the
/// revision is published without it, so one broken skill server never
/// holds back the others (RFC "Aggregation: partial failure OK").
#[derive(Clone)]
pub(crate) struct Source {
    pub(crate) cap: Arc<dyn Capability>,
    pub(crate) optional: bool,
}

/// Every catalog source visible from `scope`: the registered capabilities
/// with tools or commands, then the children of every visible capability
/// (skill-embedded servers) not registered themselves, each instance once.
fn visible_sources(registry: &ExtensionRegistry, scope: &Scope) -> Vec<Source> {
    fn lists(cap: &Arc<dyn Capability>) -> bool {
        match cap.kind() {
            CapabilityKind::McpServer => cap.mcp().is_some() || cap.commands().is_some(),
            _ => cap.commands().is_some(),
        }
    }
    fn walk(cap: &Arc<dyn Capability>, out: &mut Vec<Source>) {
        for child in cap.children() {
            if out.iter().any(|s| same_capability(&s.cap, &child)) {
                continue;
            }
            if lists(&child) {
                out.push(Source {
                    cap: child.clone(),
                    optional: true,
                });
            }
            walk(&child, out);
        }
    }
    let visible = registry.get_visible_capabilities(scope);
    let mut out: Vec<Source> = Vec::new();
    for cap in visible.iter() {
        if lists(cap) && !out.iter().any(|s| same_capability(&s.cap, cap)) {
            out.push(Source {
                cap: cap.clone(),
                optional: false,
            });
        }
    }
    for cap in visible.iter() {
        walk(cap, &mut out);
    }
    out
}

/// The sources an overlay lists itself: those its base does not already dispatch to.
fn own_sources(registry: &ExtensionRegistry, scope: &Scope, base: Option<&Shared>) -> Vec<Source> {
    let mut visible = visible_sources(registry, scope);
    if let Some(base) = base {
        let parent = base.current.load();
        let base_status = base.table.lock();
        visible.retain(|src| {
            let listed = parent
                .chain()
                .flat_map(|r| r.sources())
                .any(|s| same_capability(&s.capability, &src.cap));
            // An optional source the base left out (it failed there) stays
            // the base's: an overlay must not publish it under its own rules.
            let known = base_status
                .members
                .iter()
                .any(|m| same_capability(m, &src.cap));
            !listed && !known
        });
    }
    visible
}

fn same_members(a: &[Source], b: &[Source]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.optional == y.optional && same_capability(&x.cap, &y.cap))
}

/// The loop. Runs until the catalog is shut down or dropped. With a
/// `base`, the catalog is an overlay: it lists only the sources its base
/// does not have, and republishes over each new base revision. With a
/// `membership` provider, each cycle starts by asking it for a change of
/// the sources (see [`crate::membership`]).
pub(crate) async fn run(
    shared: Arc<Shared>,
    registry: Arc<ExtensionRegistry>,
    scope: Scope,
    base: Option<Arc<Shared>>,
    membership: Option<Arc<dyn Membership>>,
) {
    let mut base_rx = base.as_ref().map(|b| b.revisions.subscribe());
    let cfg = shared.config;
    let (tx, mut rx) = mpsc::channel::<u64>(EVENT_QUEUE);
    let mut subs: HashMap<String, Subscription> = HashMap::new();
    let mut next_generation = 0u64;
    let mut members: Vec<Source> = Vec::new();
    let mut dirty = true;
    let mut retry_at: Option<Instant> = None;
    let initial_backoff = Duration::from_millis(cfg.retry_initial_ms.max(1));
    let mut backoff = initial_backoff;
    let mut poll = tokio::time::interval(Duration::from_millis(cfg.membership_poll_ms.max(1)));
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let is_current = |subs: &HashMap<String, Subscription>, generation: u64| {
        subs.values().any(|s| s.generation == generation)
    };

    loop {
        if dirty {
            // Coalesce the burst: everything that arrives in the window is
            // covered by the cycle that follows.
            shared.set_state(LoopState::Pending);
            let window = tokio::time::sleep(Duration::from_millis(cfg.coalesce_ms));
            tokio::pin!(window);
            loop {
                tokio::select! {
                    _ = &mut window => break,
                    _ = shared.cancel.cancelled() => return stop(&shared),
                    Some(generation) = rx.recv() => count_event(&shared, is_current(&subs, generation)),
                }
            }
            dirty = false;
            let serving = shared.requested.load(Ordering::Acquire);
            shared.set_state(LoopState::Reconciling);
            let change = match &membership {
                Some(m) => tokio::select! {
                    change = m.prepare() => change,
                    _ = shared.cancel.cancelled() => return stop(&shared),
                },
                None => MembershipChange::default(),
            };
            let registered = own_sources(&registry, &scope, base.as_deref());
            let visible = with_change(registered.clone(), &change);
            let parent = base.as_ref().map(|b| b.current.load_full());
            // Subscribe before listing, so a change during the listing
            // triggers another cycle instead of being lost.
            resubscribe(&visible, &mut subs, &mut next_generation, &tx, &shared);
            let commit = Commit {
                registry: &registry,
                scope: &scope,
                change: &change,
                membership: membership.as_deref(),
            };
            let (outcome, told) = tokio::select! {
                done = cycle(&shared, &visible, parent, &commit) => done,
                _ = shared.cancel.cancelled() => return stop(&shared),
            };
            // What the registry holds now: the change's sources when it was
            // published, the ones before it otherwise (a failed change must
            // not look like a membership change to the poll below).
            members = if told.published { visible } else { registered };
            if let Some(m) = &membership {
                m.finished(change, told).await;
            }
            shared.served.send_replace(CycleOutcome {
                ticket: serving,
                ..outcome
            });
            if outcome.ok && !outcome.degraded {
                retry_at = None;
                backoff = initial_backoff;
                shared.set_state(LoopState::Idle);
            } else {
                // A failed cycle, or optional sources left out: try again later.
                let at = Instant::now() + backoff;
                retry_at = Some(at);
                backoff = (backoff * 2).min(Duration::from_millis(cfg.retry_max_ms.max(1)));
                shared.set_state(if outcome.ok {
                    LoopState::Idle
                } else {
                    LoopState::Retry(at)
                });
            }
            shared.cycles.send_modify(|n| *n += 1);
        }
        let retry = async {
            match retry_at {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        let base_changed = async {
            match base_rx.as_mut() {
                Some(rx) => {
                    if rx.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        let due = async {
            match membership.as_ref().and_then(|m| m.next_due()) {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shared.cancel.cancelled() => return stop(&shared),
            _ = base_changed => dirty = true,
            _ = due => dirty = true,
            Some(generation) = rx.recv() => {
                let current = is_current(&subs, generation);
                count_event(&shared, current);
                dirty |= current;
            }
            _ = shared.wake.notified() => dirty = true,
            _ = retry => dirty = true,
            _ = poll.tick() => {
                if !same_members(&members, &own_sources(&registry, &scope, base.as_deref())) {
                    tracing::debug!("catalog: registry membership changed");
                    dirty = true;
                }
            }
        }
    }
}

fn stop(shared: &Shared) {
    shared.set_state(LoopState::Stopped);
    // Nobody waits for a cycle that will never run.
    shared.served.send_modify(|o| o.ticket = u64::MAX);
    shared.cycles.send_modify(|n| *n += 1);
}

fn count_event(shared: &Shared, current: bool) {
    if current {
        shared.events.fetch_add(1, Ordering::Relaxed);
    } else {
        shared.ignored.fetch_add(1, Ordering::Relaxed);
        tracing::debug!("catalog: ignored a change event from a retired runtime");
    }
}

/// Keeps one subscription per current capability instance.
fn resubscribe(
    visible: &[Source],
    subs: &mut HashMap<String, Subscription>,
    next_generation: &mut u64,
    tx: &mpsc::Sender<u64>,
    shared: &Arc<Shared>,
) {
    subs.retain(|id, sub| {
        visible
            .iter()
            .any(|s| s.cap.id() == id && same_capability(&s.cap, &sub.capability))
    });
    for cap in visible.iter().map(|s| &s.cap) {
        if subs.contains_key(cap.id()) {
            continue;
        }
        let Some(mut stream) = cap.observable().and_then(|o| o.on_change()) else {
            continue;
        };
        *next_generation += 1;
        let generation = *next_generation;
        let tx = tx.clone();
        let weak = Arc::downgrade(shared);
        let id = cap.id().to_owned();
        let task = tokio::spawn(async move {
            while let Some(item) = stream.next().await {
                match item {
                    Ok(event) => {
                        tracing::trace!(source = %id, kind = %event.kind, "catalog: change event");
                        if tx.try_send(generation).is_err() {
                            // Queue full: a cycle is certainly coming; make sure.
                            if let Some(shared) = weak.upgrade() {
                                shared.wake.notify_one();
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(source = %id, "catalog: change stream failed: {e}");
                        return;
                    }
                }
            }
        });
        subs.insert(
            cap.id().to_owned(),
            Subscription {
                generation,
                capability: cap.clone(),
                task,
            },
        );
    }
}

/// Lists one source completely, within the source timeout: an MCP
/// server's tools, resources (when resource tools are on) and prompts
/// (when prompts are on); any other kind's commands.
async fn list_source(
    cap: Arc<dyn Capability>,
    services: Arc<Services>,
    timeout: Duration,
) -> Result<SourceListing, SourceError> {
    let work = async {
        let fail = |operation| move |source| SourceError::Listing { operation, source };
        let mut listing = SourceListing {
            capability: cap.clone(),
            tools: Vec::new(),
            resources: Vec::new(),
            commands: Vec::new(),
        };
        let mcp = listing.is_mcp();
        if mcp && let Some(m) = cap.mcp() {
            listing.tools = m.list_tools().await.map_err(fail("list_tools"))?;
            if services.resource_tools {
                listing.resources = m.list_resources().await.map_err(fail("list_resources"))?;
            }
        }
        if let Some(commands) = cap.commands()
            && (!mcp || services.prompts)
        {
            listing.commands = commands
                .list_commands()
                .await
                .map_err(fail("list_commands"))?;
        }
        Ok(listing)
    };
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or(Err(SourceError::Timeout {
            timeout_ms: timeout.as_millis() as u64,
        }))
}

/// The status row of `id`, created when missing.
fn status_row<'a>(table: &'a mut Table, id: &str, services: &Services) -> &'a mut SourceStatus {
    let i = match table.sources.iter().position(|s| s.id == id) {
        Some(i) => i,
        None => {
            table.sources.push(new_status(id, services));
            table.sources.len() - 1
        }
    };
    &mut table.sources[i]
}

/// One cycle: list everything, publish all-or-nothing over the required
/// sources; optional sources that fail are left out and reported. The
/// membership change of `commit` is applied right before the revision
/// built with it is published, and only then.
async fn cycle(
    shared: &Shared,
    visible: &[Source],
    parent: Option<Arc<CatalogRevision>>,
    commit: &Commit<'_>,
) -> (CycleOutcome, ChangeOutcome) {
    let cfg = shared.config;
    let timeout = Duration::from_millis(cfg.source_timeout_ms);
    let work: Vec<_> = visible
        .iter()
        .map(|src| list_source(src.cap.clone(), shared.services.clone(), timeout))
        .collect();
    let results: Vec<Result<SourceListing, SourceError>> = futures::stream::iter(work)
        .buffered(cfg.max_concurrent_sources.max(1))
        .collect()
        .await;
    let now = SystemTime::now();
    shared.reconciliations.fetch_add(1, Ordering::Relaxed);
    let current = shared.current.load_full();
    let unchanged = CycleOutcome {
        revision: current.number(),
        ..CycleOutcome::default()
    };

    let failed_required = visible
        .iter()
        .zip(&results)
        .any(|(src, r)| !src.optional && r.is_err());
    let not_published = |failed, refused| ChangeOutcome {
        published: false,
        revision: current.number(),
        failed,
        refused,
    };
    if failed_required {
        shared.failures.fetch_add(1, Ordering::Relaxed);
        let mut failed = Vec::new();
        let mut table = shared.table.lock();
        table.last_reconcile = Some(now);
        table.members = visible.iter().map(|s| s.cap.clone()).collect();
        for (src, result) in visible.iter().zip(results) {
            let Err(error) = result else { continue };
            tracing::warn!(
                source = src.cap.id(),
                "catalog: source failed, keeping the published revision: {error}"
            );
            let error = Arc::new(error);
            if commit
                .change
                .add
                .iter()
                .any(|c| same_capability(c, &src.cap))
            {
                failed.push((src.cap.id().to_owned(), error.clone()));
            }
            let status = status_row(&mut table, src.cap.id(), &shared.services);
            status.stale = !src.optional;
            status.optional = src.optional;
            status.last_error = Some(error);
            status.last_attempt = Some(now);
        }
        return (unchanged, not_published(failed, None));
    }
    if let Err(refused) = commit.apply(&shared.services) {
        tracing::warn!(
            "catalog: membership change refused, keeping the published revision: {refused}"
        );
        shared.failures.fetch_add(1, Ordering::Relaxed);
        return (unchanged, not_published(Vec::new(), Some(refused)));
    }

    let mut listings: Vec<SourceListing> = Vec::with_capacity(results.len());
    let mut left_out: Vec<(String, SourceError)> = Vec::new();
    for (src, result) in visible.iter().zip(results) {
        match result {
            Ok(listing) => listings.push(listing),
            Err(error) => {
                tracing::warn!(
                    source = src.cap.id(),
                    "catalog: optional source failed; publishing without its tools: {error}"
                );
                left_out.push((src.cap.id().to_owned(), error));
            }
        }
    }
    let counts: Vec<(String, bool, usize, usize, usize)> = listings
        .iter()
        .map(|l| {
            let id = l.capability.id().to_owned();
            let optional = visible
                .iter()
                .any(|s| s.optional && same_capability(&s.cap, &l.capability));
            (
                id,
                optional,
                l.tools.len(),
                l.resources.len(),
                l.commands.len(),
            )
        })
        .collect();
    let number = current.number() + 1;
    let candidate = match parent {
        Some(parent) => revision::build_overlay(number, listings, shared.services.clone(), parent),
        None => revision::build(number, listings, shared.services.clone()),
    };
    let changed = !candidate.same_content(&current);
    // The provider's report, the revision and the status table change
    // together: a reader that saw the provider's new report and then reads
    // the status waits for this lock and reads the new one.
    let mut table = shared.table.lock();
    commit.announce();
    let published = if changed {
        let number = candidate.number();
        shared.current.store(Arc::new(candidate));
        shared.revisions.send_replace(number);
        tracing::info!(revision = number, "catalog: published revision");
        number
    } else {
        current.number()
    };
    // Freeing a large unpinned revision is not the loop's work.
    tokio::task::spawn_blocking(move || drop(current));
    table.last_reconcile = Some(now);
    table.members = visible.iter().map(|s| s.cap.clone()).collect();
    let mut rows: Vec<SourceStatus> = counts
        .into_iter()
        .map(|(id, optional, tools, resources, commands)| SourceStatus {
            revision: Some(published),
            optional,
            last_attempt: Some(now),
            last_success: Some(now),
            tools,
            resources,
            commands,
            ..new_status(&id, &shared.services)
        })
        .collect();
    let degraded = !left_out.is_empty();
    for (id, error) in left_out {
        let previous = table.sources.iter().find(|s| s.id == id);
        rows.push(SourceStatus {
            optional: true,
            available: false,
            last_error: Some(Arc::new(error)),
            last_attempt: Some(now),
            last_success: previous.and_then(|p| p.last_success),
            ..new_status(&id, &shared.services)
        });
    }
    table.sources = rows;
    let told = ChangeOutcome {
        published: true,
        revision: published,
        failed: Vec::new(),
        refused: None,
    };
    let outcome = CycleOutcome {
        ticket: 0,
        revision: published,
        changed,
        ok: true,
        degraded,
    };
    (outcome, told)
}

fn new_status(id: &str, services: &Services) -> SourceStatus {
    SourceStatus {
        id: id.to_owned(),
        namespace: services.namespace_of(id),
        revision: None,
        stale: false,
        last_error: None,
        last_attempt: None,
        last_success: None,
        tools: 0,
        resources: 0,
        commands: 0,
        optional: false,
        available: true,
    }
}

#[cfg(test)]
mod tests;
