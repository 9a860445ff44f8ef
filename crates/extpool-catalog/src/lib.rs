//! extpool-catalog: the model-facing catalog.
//!
//! The registry answers "which capabilities can this scope see"; the
//! catalog answers "what exactly may this operation call, under which
//! names". It turns the capabilities visible from one scope into an
//! immutable, numbered [`CatalogRevision`]: remote tools namespaced as
//! `mcp__<server>__<tool>` with provider-safe aliases, permissions applied,
//! resources, prompts as commands, and the built-in resource and query
//! tools. One bounded reconciliation loop builds complete candidates and
//! publishes them atomically; every operation pins the revision it started
//! with.
//!
//! The catalog reaches capabilities only through the extpool-core traits;
//! it never depends on an MCP client.

pub mod jq;
pub mod names;
pub mod permissions;
pub mod shaping;
