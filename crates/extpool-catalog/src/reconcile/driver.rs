//! The loop itself: its state in one [`Loop`], woken by events only — a
//! source's change event, the registry's membership event, a new base
//! revision, an explicit request, the membership provider being due (its
//! due time read after each cycle and when it says it moved), a scheduled
//! retry. Nothing is polled.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use extpool_core::{ExtensionRegistry, MembershipWatch, Scope};
use tokio::sync::{mpsc, watch};

use super::subscriptions::Subscriptions;
use super::{CycleOutcome, LoopState, Shared, Source, cycle, own_sources, same_members};
use crate::membership::{Commit, Membership, MembershipChange, MembershipWaker, with_change};

/// Where the loop reads its sources from.
pub(crate) struct Inputs {
    pub(crate) registry: Arc<ExtensionRegistry>,
    pub(crate) scope: Scope,
    /// The catalog this one overlays, if any.
    pub(crate) base: Option<Arc<Shared>>,
    /// The provider of membership changes (discovery), if any.
    pub(crate) membership: Option<Arc<dyn Membership>>,
}

/// A catalog's reconciliation loop and all of its state.
pub(crate) struct Loop {
    shared: Arc<Shared>,
    inputs: Inputs,
    /// Membership events of the slots this catalog lists itself.
    slots: MembershipWatch,
    /// The base's finished cycles (an overlay's).
    base_cycles: Option<watch::Receiver<u64>>,
    /// The base revision the loop last saw.
    base_revision: u64,
    subs: Subscriptions,
    events: mpsc::Receiver<u64>,
    /// The sources of the last cycle, as the registry holds them now.
    members: Vec<Source>,
    /// A cycle is wanted.
    dirty: bool,
    /// The last `reconcile_now` ticket a cycle served.
    served: u64,
    retry: Backoff,
}

/// Why the loop woke.
enum Wake {
    Stop,
    Dirty,
    Event(u64),
    Slots,
    BaseCycle,
    /// The provider's due time moved: read it again.
    Due,
}

impl Loop {
    /// The loop over `inputs`, not yet running; its first cycle runs at once.
    pub(crate) fn new(shared: Arc<Shared>, inputs: Inputs) -> Self {
        let slots = inputs.registry.watch_slots(own_slots(&inputs));
        let base_cycles = inputs.base.as_ref().map(|b| b.cycles.subscribe());
        let (subs, events) = Subscriptions::new();
        if let Some(m) = &inputs.membership {
            m.attach(MembershipWaker::new(&shared));
        }
        let cfg = shared.config;
        Self {
            retry: Backoff::new(cfg.retry_initial_ms, cfg.retry_max_ms),
            shared,
            inputs,
            slots,
            base_cycles,
            base_revision: 0,
            subs,
            events,
            members: Vec::new(),
            dirty: true,
            served: 0,
        }
    }

    /// Runs until the catalog is shut down or dropped.
    pub(crate) async fn run(mut self) {
        loop {
            if self.dirty {
                if !self.coalesce().await {
                    break;
                }
                if !self.reconcile().await {
                    break;
                }
            }
            match self.wait().await {
                Wake::Stop => break,
                Wake::Dirty => self.dirty = true,
                Wake::Event(generation) => self.dirty |= self.count(generation),
                Wake::Slots => self.dirty |= self.members_changed(),
                Wake::BaseCycle => self.dirty |= self.base_changed(),
                Wake::Due => {}
            }
        }
        stop(&self.shared);
    }

    /// Gathers a burst: waits the coalescing window, so that everything
    /// arriving in it is covered by the one cycle that follows — unless an
    /// explicit request (`reconcile_now`) is waiting, which starts the cycle
    /// at once. False when the catalog stops.
    async fn coalesce(&mut self) -> bool {
        self.shared.set_state(LoopState::Pending);
        let window = tokio::time::sleep(Duration::from_millis(self.shared.config.coalesce_ms));
        tokio::pin!(window);
        while !self.requested() {
            let shared = &self.shared;
            let event = tokio::select! {
                _ = &mut window => break,
                _ = shared.cancel.cancelled() => return false,
                // Maybe `reconcile_now`: looked at again above.
                _ = shared.wake.notified() => None,
                Some(generation) = self.events.recv() => Some(generation),
            };
            if let Some(generation) = event {
                self.count(generation);
            }
        }
        true
    }

    /// True when a `reconcile_now` caller waits for a cycle not yet run.
    fn requested(&self) -> bool {
        self.shared.requested.load(Ordering::Acquire) > self.served
    }

    /// One cycle: the membership change prepared, the sources read, listed
    /// and published, the outcome recorded. False when the catalog stops.
    async fn reconcile(&mut self) -> bool {
        self.dirty = false;
        let serving = self.shared.requested.load(Ordering::Acquire);
        self.shared.set_state(LoopState::Reconciling);
        let change = match self.inputs.membership.clone() {
            Some(m) => match self.unless_stopped(m.prepare()).await {
                Some(change) => change,
                None => return false,
            },
            None => MembershipChange::default(),
        };
        // Any registry change from here on wakes the loop again.
        self.slots.mark_seen();
        let registered = self.own_sources();
        let visible = with_change(registered.clone(), &change);
        let parent = self.inputs.base.as_ref().map(|b| {
            let parent = b.current.load_full();
            self.base_revision = parent.number();
            parent
        });
        // Subscribe before listing, so a change during the listing
        // triggers another cycle instead of being lost.
        self.subs.resubscribe(&visible, &self.shared);
        let commit = Commit {
            registry: &self.inputs.registry,
            scope: &self.inputs.scope,
            change: &change,
            membership: self.inputs.membership.as_deref(),
        };
        let work = cycle::cycle(&self.shared, &visible, parent, &commit);
        let Some((outcome, told)) = self.unless_stopped(work).await else {
            return false;
        };
        // What the registry holds now: the change's sources when it was
        // published, the ones before it otherwise (a failed change must
        // not look like a membership change).
        self.members = if told.published { visible } else { registered };
        if let Some(m) = &self.inputs.membership {
            m.finished(change, told).await;
        }
        self.finish(outcome, serving);
        true
    }

    /// Records a finished cycle: its outcome for `reconcile_now` callers,
    /// the retry it calls for, and the cycle count.
    fn finish(&mut self, outcome: CycleOutcome, serving: u64) {
        self.served = serving;
        self.shared.served.send_replace(CycleOutcome {
            ticket: serving,
            ..outcome
        });
        let state = self.retry.after(&outcome);
        self.shared.set_state(state);
        self.shared.cycles.send_modify(|n| *n += 1);
    }

    /// Waits for the next thing that may call for a cycle.
    async fn wait(&mut self) -> Wake {
        let retry = self.retry.at;
        let due = self.inputs.membership.as_ref().and_then(|m| m.next_due());
        let (shared, events, slots) = (&self.shared, &mut self.events, &mut self.slots);
        let base_cycles = &mut self.base_cycles;
        let base_cycle = async move {
            if let Some(rx) = base_cycles
                && rx.changed().await.is_ok()
            {
                return;
            }
            std::future::pending().await
        };
        tokio::select! {
            _ = shared.cancel.cancelled() => Wake::Stop,
            _ = base_cycle => Wake::BaseCycle,
            _ = sleep_until(due) => Wake::Dirty,
            Some(generation) = events.recv() => Wake::Event(generation),
            _ = shared.wake.notified() => Wake::Dirty,
            _ = sleep_until(retry) => Wake::Dirty,
            _ = slots.changed() => Wake::Slots,
            _ = shared.due_changed.notified() => Wake::Due,
        }
    }

    /// Counts a change event; true when it is a current source's.
    fn count(&self, generation: u64) -> bool {
        let current = self.subs.is_current(generation);
        if current {
            self.shared.events.fetch_add(1, Ordering::Relaxed);
        } else {
            self.shared.ignored.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("catalog: ignored a change event from a retired runtime");
        }
        current
    }

    /// True when the registry's sources differ from the last cycle's (the
    /// membership event is a hint: the loop's own publication fires it too).
    fn members_changed(&self) -> bool {
        let changed = !same_members(&self.members, &self.own_sources());
        if changed {
            tracing::debug!("catalog: registry membership changed");
        }
        changed
    }

    /// After a base cycle: true when it published a revision this overlay
    /// has not built on yet, or changed which sources are the base's.
    fn base_changed(&mut self) -> bool {
        let number = self
            .inputs
            .base
            .as_ref()
            .map_or(0, |b| b.current.load().number());
        number != self.base_revision || self.members_changed()
    }

    fn own_sources(&self) -> Vec<Source> {
        let Inputs {
            registry,
            scope,
            base,
            ..
        } = &self.inputs;
        own_sources(registry, scope, base.as_deref())
    }

    /// Runs `work` unless the catalog stops first (`None`).
    async fn unless_stopped<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            done = work => Some(done),
            _ = self.shared.cancel.cancelled() => None,
        }
    }
}

/// The registry slots whose members this catalog lists itself: every slot
/// its scope sees, less those its base sees (the base's changes reach an
/// overlay through the base's cycles).
fn own_slots(inputs: &Inputs) -> Vec<extpool_core::ScopeKey> {
    let base = inputs
        .base
        .as_ref()
        .and_then(|b| b.scope.get())
        .map(Scope::visible_keys)
        .unwrap_or_default();
    inputs
        .scope
        .visible_keys()
        .into_iter()
        .filter(|k| !base.contains(k))
        .collect()
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Marks the loop stopped and releases whoever waits on it.
fn stop(shared: &Shared) {
    shared.set_state(LoopState::Stopped);
    // Nobody waits for a cycle that will never run.
    shared.served.send_modify(|o| o.ticket = u64::MAX);
    shared.cycles.send_modify(|n| *n += 1);
}

/// The retry after a failed cycle, doubling up to a bound.
struct Backoff {
    at: Option<Instant>,
    delay: Duration,
    initial: Duration,
    max: Duration,
}

impl Backoff {
    fn new(initial_ms: u64, max_ms: u64) -> Self {
        let initial = Duration::from_millis(initial_ms.max(1));
        Self {
            at: None,
            delay: initial,
            initial,
            max: Duration::from_millis(max_ms.max(1)),
        }
    }

    /// Schedules a retry after a failed cycle, or one that left optional
    /// sources out; resets after a complete one. Returns the loop's state.
    fn after(&mut self, outcome: &CycleOutcome) -> LoopState {
        if outcome.ok && !outcome.degraded {
            self.at = None;
            self.delay = self.initial;
            return LoopState::Idle;
        }
        let at = Instant::now() + self.delay;
        self.at = Some(at);
        self.delay = (self.delay * 2).min(self.max);
        if outcome.ok {
            LoopState::Idle
        } else {
            LoopState::Retry(at)
        }
    }
}
