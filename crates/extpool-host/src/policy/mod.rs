//! [`ViewPolicy`]: what a view's model sees and may call, compiled once
//! per catalog revision into a [`ToolTable`].
//!
//! Every decider that used to hold a part of the rule is a layer of one
//! policy, each a small step of [`compile`]:
//! - the catalog's permission rules (already applied in the revision:
//!   a denied name is known, and refused with the rule that denied it);
//! - a session's grants (its name authority: only granted names, or every
//!   name with `auto_grant`), and the rule that under the name of one of
//!   the session's own servers only that server lists tools;
//! - degraded capabilities left out (an agent's compile);
//! - the embedding program's [`CatalogFilter`]s;
//! - the front end's naming: catalog names (or their alias where MCP
//!   clients refuse the name) for a gateway, provider-safe aliases for an
//!   agent, and the servers listed under their own names (`--unprefixed`);
//! - the front end's own built-ins (the gateway's `ListMcpSources` and
//!   `RefreshMcpSources`) and tool search's deferral (deferred tools stay
//!   callable, are not listed, and `ToolSearch` is offered).
//!
//! A table is immutable and shared (`Arc`): views that read the same
//! revision under the same policy share one, compiled on first use after
//! the revision was published or the policy changed. A session's policy
//! refines the gateway's ([`ViewPolicy::refine`]): its table is the
//! gateway's shared rows plus its own refusals (what its grants and its
//! servers' names take out), so a grant change compiles only those and a
//! session never holds a copy of the catalog's rows. A call resolves its
//! name in O(1) and never lists tools; the gateway, the agent library and
//! the CLI ask the table and render its answer, none re-checks a rule. A
//! caller's rules (`permissions.principals`, matched on the claims of the
//! principal a gateway request carries) are one more refinement
//! ([`ViewPolicy::for_principal`]): they only take names out, and callers
//! with the same claims share one table.

use std::collections::HashSet;
use std::sync::Arc;

use extpool_catalog::BuiltinTool;
use extpool_core::{Principal, Scope};
use parking_lot::Mutex;

use crate::info::ModelTool;
use crate::search::DeferralConfig;

mod cache;
pub(crate) mod compile;
mod refusal;
mod table;

pub use refusal::Refusal;
pub use table::{Resolved, Row, ToolTable};

/// Filters or reorders the tools offered at a scope (the catalog extension
/// point of the MCP client behaviour doc, "control the catalog exposed to
/// the model"). What a filter removes is neither offered nor callable.
pub trait CatalogFilter: Send + Sync {
    /// Keeps, drops or reorders `tools` (the model sees them in this order).
    fn apply(&self, scope: &Scope, tools: &mut Vec<ModelTool>);
}

impl<F> CatalogFilter for F
where
    F: Fn(&Scope, &mut Vec<ModelTool>) + Send + Sync,
{
    fn apply(&self, scope: &Scope, tools: &mut Vec<ModelTool>) {
        self(scope, tools)
    }
}

/// Which name of a tool a front end gives its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Naming {
    /// The provider-safe alias (`[A-Za-z0-9_-]`, at most 64): what model
    /// providers take (the agent library, the CLI).
    #[default]
    Provider,
    /// The catalog name when MCP clients accept it, else the alias (the
    /// gateway: `extpool_catalog::names::is_client_safe`).
    Client,
}

/// A session's name authority as a policy asks it: whether the session
/// may use an active name. The rule (granted names, or every name with
/// `auto_grant`) is its owner's — the session store's — and this only asks.
#[derive(Clone)]
pub struct Grants(Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl std::fmt::Debug for Grants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Grants(..)")
    }
}

impl Grants {
    /// The grants `allows` answers.
    pub fn new(allows: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(allows))
    }

    /// Whether the session may use `name` when it is active.
    pub fn allows(&self, name: &str) -> bool {
        (self.0)(name)
    }
}

/// The layers every view of a front end shares, as given.
#[derive(Clone, Default)]
pub(crate) struct Layers {
    pub exclude_degraded: bool,
    pub filters: Vec<Arc<dyn CatalogFilter>>,
    pub naming: Naming,
    pub unprefixed: HashSet<String>,
    pub front: Vec<BuiltinTool>,
    pub deferral: Option<DeferralConfig>,
}

/// The layers one view adds to its front end's: they only take tools out.
#[derive(Clone, Default)]
pub(crate) struct Refinement {
    pub grants: Option<Grants>,
    pub own_servers: Vec<String>,
    /// The caller whose `permissions.principals` rules apply.
    pub principal: Option<Arc<Principal>>,
}

impl Refinement {
    fn is_empty(&self) -> bool {
        self.grants.is_none() && self.own_servers.is_empty() && self.principal.is_none()
    }
}

/// Most callers one policy keeps a refinement for (the least recently
/// used is dropped; it is made again on its caller's next request).
const KEPT_PRINCIPALS: usize = 256;

/// What makes two callers' rules the same: who they are for `sub` rules,
/// and the claims the rules match.
type PrincipalKey = (String, std::collections::BTreeMap<String, Vec<String>>);

/// What a view's model sees and may call, layer by layer; immutable and
/// shared (`Arc`). Views that hold the same policy and read the same
/// revision share one compiled [`ToolTable`].
pub struct ViewPolicy {
    layers: Layers,
    /// The policy this one refines, and what it takes out.
    refines: Option<(Arc<ViewPolicy>, Refinement)>,
    tables: cache::Tables,
    /// This policy for each recent caller ([`ViewPolicy::for_principal`]),
    /// the most recently used first.
    callers: Mutex<Vec<(PrincipalKey, Arc<ViewPolicy>)>>,
}

impl std::fmt::Debug for ViewPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let l = &self.layers;
        f.debug_struct("ViewPolicy")
            .field("grants", &self.grants().is_some())
            .field("own_servers", &self.refinement().map(|r| &r.own_servers))
            .field("exclude_degraded", &l.exclude_degraded)
            .field("filters", &l.filters.len())
            .field("naming", &l.naming)
            .field("unprefixed", &l.unprefixed.len())
            .field("front", &l.front)
            .field("deferral", &l.deferral)
            .finish()
    }
}

impl ViewPolicy {
    /// The policy without layers: every tool the revision publishes, by
    /// its alias (what the CLI and a plain library view see).
    pub fn open() -> Arc<ViewPolicy> {
        PolicyBuilder::default().build()
    }

    /// A builder for a policy.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::default()
    }

    /// A builder starting from this policy's layers.
    pub fn to_builder(&self) -> PolicyBuilder {
        PolicyBuilder {
            layers: self.layers.clone(),
            refinement: self.refinement().cloned().unwrap_or_default(),
        }
    }

    /// This policy narrowed for one view: only the names `grants` allows
    /// (a session's name authority; `None` allows every name), and under
    /// the names of `own_servers` only the view's own catalog lists tools
    /// (a server discovered later under the name of a session's server
    /// takes none of its names). Its tables share this policy's rows: a
    /// grant change compiles only what it takes out.
    pub fn refine(
        self: &Arc<Self>,
        grants: Option<Grants>,
        own_servers: impl IntoIterator<Item = String>,
    ) -> Arc<ViewPolicy> {
        let base = match &self.refines {
            Some((base, _)) => base.clone(),
            None => self.clone(),
        };
        let refinement = Refinement {
            grants,
            own_servers: own_servers.into_iter().collect(),
            principal: None,
        };
        if refinement.is_empty() {
            return base;
        }
        Arc::new(ViewPolicy {
            layers: base.layers.clone(),
            refines: Some((base, refinement)),
            tables: cache::Tables::default(),
            callers: Mutex::default(),
        })
    }

    /// This policy for `principal`'s requests: what it takes out, and what
    /// the `permissions.principals` rules that match the caller take out
    /// too (read from each table's revision). Callers with the same subject
    /// and claims share one; the one caller of a gateway without
    /// identities gets this policy itself. A front end asks only when the
    /// revision has such rules.
    pub fn for_principal(self: &Arc<Self>, principal: &Arc<Principal>) -> Arc<ViewPolicy> {
        if principal.is_local() {
            return self.clone();
        }
        let key: PrincipalKey = (principal.owner(), principal.claims.clone());
        let mut callers = self.callers.lock();
        if let Some(i) = callers.iter().position(|(k, _)| *k == key) {
            let entry = callers.remove(i);
            let policy = entry.1.clone();
            callers.insert(0, entry);
            return policy;
        }
        let (base, mut refinement) = match &self.refines {
            Some((base, refinement)) => (base.clone(), refinement.clone()),
            None => (self.clone(), Refinement::default()),
        };
        refinement.principal = Some(principal.clone());
        let policy = Arc::new(ViewPolicy {
            layers: base.layers.clone(),
            refines: Some((base, refinement)),
            tables: cache::Tables::default(),
            callers: Mutex::default(),
        });
        callers.insert(0, (key, policy.clone()));
        callers.truncate(KEPT_PRINCIPALS);
        policy
    }

    /// The session grants this policy applies, if any.
    pub fn grants(&self) -> Option<&Grants> {
        self.refinement().and_then(|r| r.grants.as_ref())
    }

    pub(crate) fn refinement(&self) -> Option<&Refinement> {
        self.refines.as_ref().map(|(_, r)| r)
    }

    /// The policy this one refines.
    pub(crate) fn base(&self) -> Option<&Arc<ViewPolicy>> {
        self.refines.as_ref().map(|(b, _)| b)
    }

    /// The deferral this policy applies, if any.
    pub fn deferral(&self) -> Option<&DeferralConfig> {
        self.layers.deferral.as_ref()
    }

    /// Whether degraded capabilities' tools are left out.
    pub fn excludes_degraded(&self) -> bool {
        self.layers.exclude_degraded
    }

    pub(crate) fn layers(&self) -> &Layers {
        &self.layers
    }

    pub(crate) fn tables(&self) -> &cache::Tables {
        &self.tables
    }
}

/// The cache key of a table: the scope when a filter reads it, the health
/// epoch when degraded capabilities are left out.
pub(crate) fn cache_key(scope: Option<Scope>, health: Option<u64>) -> CacheKey {
    cache::Key { scope, health }
}

/// What a table was compiled from besides its revision.
pub(crate) type CacheKey = cache::Key;

/// Builds a [`ViewPolicy`], one layer at a time.
#[derive(Default)]
pub struct PolicyBuilder {
    layers: Layers,
    refinement: Refinement,
}

impl PolicyBuilder {
    /// Only the names `grants` allows (a session's name authority); `None`
    /// allows every name.
    pub fn grants(mut self, grants: Option<Grants>) -> Self {
        self.refinement.grants = grants;
        self
    }

    /// The view's own servers: under their names only the view's own
    /// catalog lists tools (a server discovered later under the name of a
    /// session's server takes none of its names).
    pub fn own_servers(mut self, servers: impl IntoIterator<Item = String>) -> Self {
        self.refinement.own_servers = servers.into_iter().collect();
        self
    }

    /// Leaves out the tools of degraded capabilities (an agent's compile).
    pub fn exclude_degraded(mut self, on: bool) -> Self {
        self.layers.exclude_degraded = on;
        self
    }

    /// Adds `filter` after the others.
    pub fn filter(mut self, filter: Arc<dyn CatalogFilter>) -> Self {
        self.layers.filters.push(filter);
        self
    }

    /// Which name the model is given.
    pub fn naming(mut self, naming: Naming) -> Self {
        self.layers.naming = naming;
        self
    }

    /// Servers whose tools are listed under their own names where nothing
    /// collides (the gateway's `--unprefixed`).
    pub fn unprefixed(mut self, servers: impl IntoIterator<Item = String>) -> Self {
        self.layers.unprefixed = servers.into_iter().collect();
        self
    }

    /// Built-ins the front end answers itself, listed after the catalog's
    /// (the gateway's `ListMcpSources` and `RefreshMcpSources`).
    pub fn front_tools(mut self, tools: impl IntoIterator<Item = BuiltinTool>) -> Self {
        self.layers.front = tools.into_iter().collect();
        self
    }

    /// Defers tool schemas above `deferral`'s budget behind `ToolSearch`.
    pub fn deferral(mut self, deferral: Option<DeferralConfig>) -> Self {
        self.layers.deferral = deferral;
        self
    }

    /// The policy (a refinement of the shared layers' policy when it has
    /// grants or own servers: prefer [`ViewPolicy::refine`] of one shared
    /// policy, so that views share its rows).
    pub fn build(self) -> Arc<ViewPolicy> {
        let base = Arc::new(ViewPolicy {
            layers: self.layers,
            refines: None,
            tables: cache::Tables::default(),
            callers: Mutex::default(),
        });
        let Refinement {
            grants,
            own_servers,
            principal,
        } = self.refinement;
        let refined = base.refine(grants, own_servers);
        match principal {
            Some(principal) => refined.for_principal(&principal),
            None => refined,
        }
    }
}

#[cfg(test)]
mod props;
