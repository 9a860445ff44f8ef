//! The one bounded reconciliation loop of a catalog.
//!
//! Triggers — a `list_changed` (or skill watcher) [`ChangeEvent`] from a
//! current source, a membership event of the registry (a capability
//! registered, unregistered or replaced in a slot the catalog lists), a new
//! revision of the base, a scheduled retry, the membership provider being
//! due — only mark the catalog dirty; nothing is polled. The loop then
//! waits a short coalescing window, so a burst of notifications costs one
//! cycle — except for an explicit request ([`crate::Catalog::reconcile_now`]),
//! whose cycle starts at once — and runs one cycle at a time: list every
//! visible source (bounded concurrency, a timeout per source), and only
//! when *all* succeed build a complete candidate and publish it with one
//! atomic swap. When any source fails, the published revision stays, the
//! failing sources are marked stale with their error, and a retry is
//! scheduled with exponential backoff.
//!
//! Each source's change stream is tagged with a generation; when a
//! capability is replaced (a new runtime under the same id) or removed, its
//! old subscription is dropped and late events carrying the old generation
//! are counted and ignored.
//!
//! [`ChangeEvent`]: extpool_core::ChangeEvent

mod cycle;
mod driver;
mod subscriptions;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use extpool_core::{Capability, CapabilityKind, ExtensionRegistry, Scope};
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::config::ReconcileConfig;
use crate::membership::Membership;
use crate::revision::{CatalogRevision, SourceListing, same_capability};
use crate::services::Services;
use crate::status::{CatalogStatus, ReconcileState, SourceError, SourceStatus};

/// State shared by the catalog handle and its loop.
pub(crate) struct Shared {
    pub(crate) services: Arc<Services>,
    pub(crate) config: ReconcileConfig,
    pub(crate) current: ArcSwap<CatalogRevision>,
    pub(crate) revisions: watch::Sender<u64>,
    pub(crate) cycles: watch::Sender<u64>,
    pub(crate) wake: Notify,
    /// The membership provider's due time moved (see
    /// [`crate::MembershipWaker`]).
    pub(crate) due_changed: Notify,
    /// Tickets handed out by `reconcile_now`; a cycle serves every ticket
    /// taken before it started listing.
    pub(crate) requested: AtomicU64,
    /// The outcome of the latest cycle and the last ticket it served.
    pub(crate) served: watch::Sender<CycleOutcome>,
    pub(crate) cancel: CancellationToken,
    /// The scope the loop lists, set when it starts (an overlay leaves the
    /// slots its base sees to the base).
    pub(crate) scope: OnceLock<Scope>,
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
            due_changed: Notify::new(),
            requested: AtomicU64::new(0),
            served: watch::channel(CycleOutcome::default()).0,
            cancel: CancellationToken::new(),
            scope: OnceLock::new(),
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
            _ => cap.commands().is_some() || cap.skills().is_some(),
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
    let inputs = driver::Inputs {
        registry,
        scope,
        base,
        membership,
    };
    driver::Loop::new(shared, inputs).run().await;
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
        let fail = |operation| move |error| SourceError::Listing { operation, error };
        let mut listing = SourceListing {
            capability: cap.clone(),
            tools: Vec::new(),
            resources: Vec::new(),
            commands: Vec::new(),
            skills: SourceListing::own_skills(&cap).await,
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
