//! [`CatalogFilter`]: the embedding program's say over which tools an agent
//! is offered, and in what order (the catalog extension point of the MCP
//! client behaviour doc, "control the catalog exposed to the model").
//!
//! A filter is one layer of the factory's view policy (the host's
//! [`extpool_host::policy`]): it runs on every table compiled for an
//! agent, after permissions and after degraded capabilities are left out,
//! before deferral. What it removes is not offered *and* not callable by
//! that agent: a filter is an access rule, not only a presentation. It sees
//! the agent's scope, so one program can give its agents different
//! catalogs.

pub use extpool_host::policy::CatalogFilter;
