//! [`Membership`]: how discovery feeds the reconciliation loop.
//!
//! Servers found while running — by polling a discovery service, or in an
//! edited configuration file — join and leave the catalog through the same
//! one bounded loop as `list_changed` notifications. At the start of a
//! cycle the loop asks its membership provider for a [`MembershipChange`]
//! (capabilities to add, ids to remove); it lists the sources as they would
//! be after the change, and only when every listing succeeds does it apply
//! the change to the registry and publish the revision built with it, in
//! one step with no `.await` between: additions and removals are published
//! together, or not at all. Then it tells the provider what became of the
//! change, so that a retired capability can drain and close.
//!
//! The provider decides *when* it has something to consult (its polling
//! interval, its backoff); the loop reads [`Membership::next_due`] after
//! each cycle and when the provider says it moved
//! ([`MembershipWaker::due_changed`]), and wakes at that time — it never
//! polls. Cycles never overlap: the provider is consulted by the loop, one
//! cycle at a time.

use std::sync::{Arc, Weak};
use std::time::Instant;

use async_trait::async_trait;
use extpool_core::{Capability, ExtensionRegistry, Scope};

use crate::reconcile::{Shared, Source};
use crate::services::Services;
use crate::status::SourceError;

/// A change of the loop's sources, built before a cycle lists them.
#[derive(Default, Clone)]
pub struct MembershipChange {
    /// Capabilities to add: new ids, or replacements of the capability
    /// registered under the same id (whose id is then in `remove` too).
    pub add: Vec<Arc<dyn Capability>>,
    /// Ids to remove.
    pub remove: Vec<String>,
    /// The namespace of each added capability (`None`: its id).
    pub namespaces: Vec<(String, Option<String>)>,
}

impl std::fmt::Debug for MembershipChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MembershipChange")
            .field("add", &self.add.iter().map(|c| c.id()).collect::<Vec<_>>())
            .field("remove", &self.remove)
            .finish()
    }
}

impl MembershipChange {
    /// True when it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.add.is_empty() && self.remove.is_empty()
    }
}

/// What became of a [`MembershipChange`].
#[derive(Debug, Clone, Default)]
pub struct ChangeOutcome {
    /// True when the change is in the registry and the published revision.
    pub published: bool,
    /// The revision published after the cycle.
    pub revision: u64,
    /// The added capabilities that could not be listed, with the error.
    pub failed: Vec<(String, Arc<SourceError>)>,
    /// Why the change could not be applied to the registry, if that failed.
    pub refused: Option<String>,
}

/// How a provider tells the loop it serves that [`Membership::next_due`]
/// changed outside a cycle (a source marked to be consulted now). Handed to
/// the provider by [`Membership::attach`]; does nothing once the catalog
/// is gone.
#[derive(Clone)]
pub struct MembershipWaker {
    shared: Weak<Shared>,
}

impl std::fmt::Debug for MembershipWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MembershipWaker").finish_non_exhaustive()
    }
}

impl MembershipWaker {
    pub(crate) fn new(shared: &Arc<Shared>) -> Self {
        Self {
            shared: Arc::downgrade(shared),
        }
    }

    /// Has the loop read [`Membership::next_due`] again (and wake at the
    /// new time). Cheap; never blocks.
    pub fn due_changed(&self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.due_changed.notify_one();
        }
    }
}

/// The provider of a catalog's membership changes (discovery).
#[async_trait]
pub trait Membership: Send + Sync + 'static {
    /// When the provider next wants a cycle (its polling interval, or a
    /// retry after backoff); `None`: only when asked. Read after each cycle
    /// and after [`MembershipWaker::due_changed`].
    fn next_due(&self) -> Option<Instant>;

    /// Given, once, the waker of the loop that consults this provider, when
    /// the loop starts: call it whenever `next_due` moves outside a cycle.
    fn attach(&self, waker: MembershipWaker) {
        let _ = waker;
    }

    /// Consults what is due and builds the change, its new capabilities
    /// started. Called by the loop at the start of a cycle; an empty change
    /// when nothing is due or a candidate could not be built (the provider
    /// keeps its last usable state and reports why).
    async fn prepare(&self) -> MembershipChange;

    /// Called when the change is applied — synchronously, after the
    /// registry holds it and right before the revision built with it is
    /// published — so that what the provider reports matches that revision
    /// from its first moment. Must not block.
    fn committed(&self, change: &MembershipChange) {
        let _ = change;
    }

    /// Told what became of the change `prepare` returned. Called by the
    /// loop after the cycle; should not wait on upstream servers (spawn
    /// the draining of retired ones).
    async fn finished(&self, change: MembershipChange, outcome: ChangeOutcome);
}

/// The sources of a cycle with a membership change applied: the removed
/// ids left out, the added capabilities in (required).
pub(crate) fn with_change(mut visible: Vec<Source>, change: &MembershipChange) -> Vec<Source> {
    visible.retain(|s| !change.remove.iter().any(|id| id == s.cap.id()));
    visible.extend(change.add.iter().map(|cap| Source {
        cap: cap.clone(),
        optional: false,
    }));
    visible
}

/// Where a cycle applies a membership change when it publishes.
pub(crate) struct Commit<'a> {
    pub(crate) registry: &'a ExtensionRegistry,
    pub(crate) scope: &'a Scope,
    pub(crate) change: &'a MembershipChange,
    pub(crate) membership: Option<&'a dyn Membership>,
}

impl Commit<'_> {
    /// Applies the change to the registry and the namespaces; an error
    /// changes nothing.
    pub(crate) fn apply(&self, services: &Services) -> Result<(), String> {
        if self.change.is_empty() {
            return Ok(());
        }
        let remove: Vec<&str> = self.change.remove.iter().map(String::as_str).collect();
        self.registry
            .replace(
                self.scope.level(),
                self.scope,
                &remove,
                self.change.add.clone(),
            )
            .map_err(|e| e.to_string())?;
        for (id, namespace) in &self.change.namespaces {
            services.set_namespace(id, namespace.as_deref());
        }
        Ok(())
    }

    /// Tells the provider its applied change is about to be published (the
    /// cycle holds the status table meanwhile, so that a reader of the
    /// provider's report never reads an older status after it).
    pub(crate) fn announce(&self) {
        if let Some(m) = self.membership.filter(|_| !self.change.is_empty()) {
            m.committed(self.change);
        }
    }
}
