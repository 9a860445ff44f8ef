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
use extpool_core::{Capability, ExtensionRegistry, Scope};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::config::ReconcileConfig;
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

/// Every catalog source visible from `scope`: capabilities with tools or
/// commands, and their children (skill-embedded servers), each instance once.
fn visible_sources(registry: &ExtensionRegistry, scope: &Scope) -> Vec<Arc<dyn Capability>> {
    fn walk(cap: &Arc<dyn Capability>, out: &mut Vec<Arc<dyn Capability>>) {
        if out.iter().any(|c| same_capability(c, cap)) {
            return;
        }
        if cap.mcp().is_some() || cap.commands().is_some() {
            out.push(cap.clone());
        }
        for child in cap.children() {
            walk(&child, out);
        }
    }
    let mut out = Vec::new();
    for cap in registry.get_visible_capabilities(scope).iter() {
        walk(cap, &mut out);
    }
    out
}

/// The sources an overlay lists itself: those its base does not already dispatch to.
fn own_sources(
    registry: &ExtensionRegistry,
    scope: &Scope,
    base: Option<&Shared>,
) -> Vec<Arc<dyn Capability>> {
    let mut visible = visible_sources(registry, scope);
    if let Some(base) = base {
        let parent = base.current.load();
        visible.retain(|cap| {
            !parent
                .chain()
                .flat_map(|r| r.sources())
                .any(|s| same_capability(&s.capability, cap))
        });
    }
    visible
}

fn same_members(a: &[Arc<dyn Capability>], b: &[Arc<dyn Capability>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_capability(x, y))
}

/// The loop. Runs until the catalog is shut down or dropped. With a
/// `base`, the catalog is an overlay: it lists only the sources its base
/// does not have, and republishes over each new base revision.
pub(crate) async fn run(
    shared: Arc<Shared>,
    registry: Arc<ExtensionRegistry>,
    scope: Scope,
    base: Option<Arc<Shared>>,
) {
    let mut base_rx = base.as_ref().map(|b| b.revisions.subscribe());
    let cfg = shared.config;
    let (tx, mut rx) = mpsc::channel::<u64>(EVENT_QUEUE);
    let mut subs: HashMap<String, Subscription> = HashMap::new();
    let mut next_generation = 0u64;
    let mut members: Vec<Arc<dyn Capability>> = Vec::new();
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
            shared.set_state(LoopState::Reconciling);
            let visible = own_sources(&registry, &scope, base.as_deref());
            let parent = base.as_ref().map(|b| b.current.load_full());
            // Subscribe before listing, so a change during the listing
            // triggers another cycle instead of being lost.
            resubscribe(&visible, &mut subs, &mut next_generation, &tx, &shared);
            members = visible.clone();
            let ok = tokio::select! {
                ok = cycle(&shared, &visible, parent) => ok,
                _ = shared.cancel.cancelled() => return stop(&shared),
            };
            if ok {
                retry_at = None;
                backoff = initial_backoff;
                shared.set_state(LoopState::Idle);
            } else {
                let at = Instant::now() + backoff;
                retry_at = Some(at);
                backoff = (backoff * 2).min(Duration::from_millis(cfg.retry_max_ms.max(1)));
                shared.set_state(LoopState::Retry(at));
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
        tokio::select! {
            _ = shared.cancel.cancelled() => return stop(&shared),
            _ = base_changed => dirty = true,
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
    visible: &[Arc<dyn Capability>],
    subs: &mut HashMap<String, Subscription>,
    next_generation: &mut u64,
    tx: &mpsc::Sender<u64>,
    shared: &Arc<Shared>,
) {
    subs.retain(|id, sub| {
        visible
            .iter()
            .any(|c| c.id() == id && same_capability(c, &sub.capability))
    });
    for cap in visible {
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

/// Lists one source completely, within the source timeout.
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
        if let Some(mcp) = cap.mcp() {
            listing.tools = mcp.list_tools().await.map_err(fail("list_tools"))?;
            if services.resource_tools {
                listing.resources = mcp.list_resources().await.map_err(fail("list_resources"))?;
            }
        }
        if let Some(commands) = cap.commands()
            && (cap.mcp().is_none() || services.prompts)
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

/// One cycle: list everything, publish all-or-nothing. True on success.
async fn cycle(
    shared: &Shared,
    visible: &[Arc<dyn Capability>],
    parent: Option<Arc<CatalogRevision>>,
) -> bool {
    let cfg = shared.config;
    let timeout = Duration::from_millis(cfg.source_timeout_ms);
    let work: Vec<_> = visible
        .iter()
        .map(|cap| list_source(cap.clone(), shared.services.clone(), timeout))
        .collect();
    let results: Vec<Result<SourceListing, SourceError>> = futures::stream::iter(work)
        .buffered(cfg.max_concurrent_sources.max(1))
        .collect()
        .await;
    let now = SystemTime::now();
    shared.reconciliations.fetch_add(1, Ordering::Relaxed);

    let failed = results.iter().any(Result::is_err);
    if failed {
        shared.failures.fetch_add(1, Ordering::Relaxed);
        let mut table = shared.table.lock();
        table.last_reconcile = Some(now);
        for (cap, result) in visible.iter().zip(results) {
            let Err(error) = result else { continue };
            tracing::warn!(
                source = cap.id(),
                "catalog: source failed, keeping the published revision: {error}"
            );
            let i = match table.sources.iter().position(|s| s.id == cap.id()) {
                Some(i) => i,
                None => {
                    table.sources.push(new_status(cap.id(), &shared.services));
                    table.sources.len() - 1
                }
            };
            let status = &mut table.sources[i];
            status.stale = true;
            status.last_error = Some(Arc::new(error));
            status.last_attempt = Some(now);
        }
        return false;
    }

    let listings: Vec<SourceListing> = results.into_iter().filter_map(Result::ok).collect();
    let counts: Vec<(String, usize, usize, usize)> = listings
        .iter()
        .map(|l| {
            let id = l.capability.id().to_owned();
            (id, l.tools.len(), l.resources.len(), l.commands.len())
        })
        .collect();
    let current = shared.current.load_full();
    let number = current.number() + 1;
    let candidate = match parent {
        Some(parent) => revision::build_overlay(number, listings, shared.services.clone(), parent),
        None => revision::build(number, listings, shared.services.clone()),
    };
    let published = if candidate.same_content(&current) {
        current.number()
    } else {
        let number = candidate.number();
        shared.current.store(Arc::new(candidate));
        shared.revisions.send_replace(number);
        tracing::info!(revision = number, "catalog: published revision");
        number
    };
    // Freeing a large unpinned revision is not the loop's work.
    tokio::task::spawn_blocking(move || drop(current));
    let mut table = shared.table.lock();
    table.last_reconcile = Some(now);
    table.sources = counts
        .into_iter()
        .map(|(id, tools, resources, commands)| SourceStatus {
            revision: Some(published),
            stale: false,
            last_error: None,
            last_attempt: Some(now),
            last_success: Some(now),
            tools,
            resources,
            commands,
            ..new_status(&id, &shared.services)
        })
        .collect();
    true
}

fn new_status(id: &str, services: &Services) -> SourceStatus {
    SourceStatus {
        id: id.to_owned(),
        namespace: services.namespace_of(id).to_owned(),
        revision: None,
        stale: false,
        last_error: None,
        last_attempt: None,
        last_success: None,
        tools: 0,
        resources: 0,
        commands: 0,
    }
}

#[cfg(test)]
mod tests;
