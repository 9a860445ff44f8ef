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

pub mod builtins;
pub mod catalog;
pub mod config;
pub mod dispatch;
pub mod fetch;
mod index;
pub mod jq;
pub mod membership;
pub mod names;
pub mod permissions;
pub mod prompts;
mod reconcile;
pub mod revision;
pub mod services;
pub mod shaping;
pub mod status;

pub use builtins::{BuiltinServers, BuiltinTool, Query, Runner};
pub use catalog::{Catalog, CatalogError};
pub use config::{CatalogConfig, ReconcileConfig};
pub use dispatch::CallError;
pub use fetch::{BlockedAddress, FetchConfig, FetchError, Fetcher};
pub use jq::{JqError, JqLimits};
pub use membership::{ChangeOutcome, Membership, MembershipChange, MembershipWaker};
pub use names::NameError;
pub use permissions::{Decision, DefaultPolicy, Permissions, PermissionsConfig, Rule, RuleList};
pub use prompts::CommandError;
pub use reconcile::CycleOutcome;
pub use revision::{
    CatalogCommand, CatalogResource, CatalogRevision, CatalogSkill, CatalogTool, CommandKind,
    Diagnostic, Problem, RevisionSource, SourceListing, ToolRef,
};
pub use services::Services;
pub use shaping::{ResultLimits, StructuredTooLarge};
pub use status::{CatalogStatus, ReconcileState, SourceError, SourceStatus};
