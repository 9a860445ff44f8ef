//! A view's policy and the table it compiles to: set by a front end (a
//! gateway session's grants, an agent factory's filters), inherited by the
//! views inside, and compiled once per revision (see [`crate::policy`]).

use std::sync::Arc;

use extpool_catalog::CatalogRevision;
use extpool_core::Scope;

use super::View;
use crate::policy::compile::{Context, compile, refine};
use crate::policy::{ToolTable, ViewPolicy};

/// What a table is pinned to ([`View::table`]): a policy (the view's own
/// when none), a revision (the one published now when none), and the scope
/// the policy's filters read (the view's own when none). A turn pins its
/// agent's policy, revision and scope; a gateway call pins its caller's
/// policy.
#[derive(Debug, Clone, Copy, Default)]
#[must_use]
pub struct Pin<'a> {
    policy: Option<&'a Arc<ViewPolicy>>,
    revision: Option<&'a Arc<CatalogRevision>>,
    scope: Option<&'a Scope>,
}

impl<'a> Pin<'a> {
    /// Nothing pinned: the view's own policy over the revision published
    /// now.
    pub fn now() -> Self {
        Self::default()
    }

    /// Under `policy` instead of the view's own.
    pub fn policy(self, policy: &'a Arc<ViewPolicy>) -> Self {
        Self {
            policy: Some(policy),
            ..self
        }
    }

    /// On `revision`, one pinned earlier (a turn's), even when a newer one
    /// has been published since.
    pub fn revision(self, revision: &'a Arc<CatalogRevision>) -> Self {
        Self {
            revision: Some(revision),
            ..self
        }
    }

    /// With `scope` given to the policy's filters (an agent's, for its
    /// turns: they share the agent's table until they register something
    /// of their own).
    pub fn scope(self, scope: &'a Scope) -> Self {
        Self {
            scope: Some(scope),
            ..self
        }
    }
}

impl View {
    /// Gives this view (and the views inside it without a policy of their
    /// own) `policy`: its next table is compiled under it.
    pub fn set_policy(&self, policy: Arc<ViewPolicy>) {
        *self.inner.policy.lock() = Some(policy);
    }

    /// The policy this view reads through: its own, else the nearest
    /// parent's, else the host's open policy.
    pub fn policy(&self) -> Arc<ViewPolicy> {
        if let Some(own) = self.inner.policy.lock().clone() {
            return own;
        }
        let mut next = self.inner.parent.upgrade();
        while let Some(view) = next {
            if let Some(own) = view.policy.lock().clone() {
                return own;
            }
            next = view.parent.upgrade();
        }
        self.inner.host.policy.clone()
    }

    /// The table `pin` names: a policy over a revision, compiled once
    /// and shared with every view of the same policy and revision. With
    /// nothing pinned ([`Pin::now`]), what this view's model sees and may
    /// call now: its own policy over the revision published now.
    pub fn table(&self, pin: Pin<'_>) -> Arc<ToolTable> {
        let policy = match pin.policy {
            Some(policy) => policy.clone(),
            None => self.policy(),
        };
        let revision = match pin.revision {
            Some(revision) => revision.clone(),
            None => self.revision(),
        };
        let scope = pin.scope.unwrap_or(&self.inner.scope);
        self.compile_table(&policy, &revision, scope)
    }

    /// The table of `policy` over `revision` with `scope` given to the
    /// policy's filters.
    fn compile_table(
        &self,
        policy: &Arc<ViewPolicy>,
        revision: &Arc<CatalogRevision>,
        scope: &Scope,
    ) -> Arc<ToolTable> {
        // The degraded set first: asking recovers what a catalog listed
        // since, which moves the epoch.
        let degraded = match policy.excludes_degraded() {
            true => self.degraded(),
            false => Vec::new(),
        };
        let layers = policy.layers();
        // Filters read the scope, and what is degraded depends on what
        // the scope sees.
        let scoped = !layers.filters.is_empty() || layers.exclude_degraded;
        let key = crate::policy::cache_key(
            scoped.then(|| scope.clone()),
            layers
                .exclude_degraded
                .then(|| self.inner.host.health.epoch()),
        );
        if let (Some(base), Some(refinement)) = (policy.base(), policy.refinement()) {
            let shared = self.compiled(base, revision, scope, key.clone(), &degraded);
            return policy
                .tables()
                .get(revision, key, || refine(&shared, refinement));
        }
        self.compiled(policy, revision, scope, key, &degraded)
    }

    /// The table of the shared layers of `policy` (no refinement), from
    /// its cache.
    fn compiled(
        &self,
        policy: &Arc<ViewPolicy>,
        revision: &Arc<CatalogRevision>,
        scope: &Scope,
        key: crate::policy::CacheKey,
        degraded: &[crate::health::Degraded],
    ) -> Arc<ToolTable> {
        policy.tables().get(revision, key, || {
            compile(
                policy.layers(),
                &Context {
                    revision,
                    scope,
                    degraded,
                },
            )
        })
    }
}
