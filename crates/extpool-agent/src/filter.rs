//! [`CatalogFilter`]: the embedding program's say over which tools an agent
//! is offered, and in what order (the catalog extension point of the MCP
//! client behaviour doc, "control the catalog exposed to the model").
//!
//! A filter runs on every compile, after permissions (the catalog's) and
//! after degraded capabilities are left out, before deferral. What it
//! removes is not offered *and* not callable by that agent: a filter is an
//! access rule, not only a presentation. It sees the agent's scope, so one
//! program can give its agents different catalogs.

use extpool_host::{ModelTool, Scope};

/// Filters or reorders the tools an agent at `scope` is offered.
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
