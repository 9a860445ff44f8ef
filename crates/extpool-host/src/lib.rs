//! extpool-host: one library that turns a configuration into running
//! extensions — MCP servers, Agent Skills and commands — behind scoped views.
//!
//! The `extpool` command line, the gateway (`extpool serve`) and Rust agent
//! runtimes all stand on this crate; none of them assembles the library
//! crates itself. One dependency is enough: what an embedding program needs
//! is re-exported here.
//!
//! ```no_run
//! # async fn example() -> Result<(), extpool_host::HostError> {
//! use extpool_host::{Host, HostOptions, ToolCall};
//!
//! let host = Host::start(HostOptions::files(["extpool.yaml"])).await?;
//! let session = host.session("s1")?;
//! for tool in session.tools() {
//!     println!("{} — {}", tool.name, tool.description);
//! }
//! let args = serde_json::json!({"message": "hi"});
//! let args = args.as_object().cloned().unwrap_or_default();
//! let result = session.call(ToolCall::new("mcp__testkit__echo", args)).await.outcome?;
//! println!("{}", result.joined_text());
//! let skill = session.read("skill://release-notes/SKILL.md").await?;
//! println!("{}", skill.as_text().unwrap_or_default());
//! host.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # What it owns
//! - the [`ExtensionRegistry`] (pool → session → agent → turn visibility),
//! - the [`SessionConnectionPool`] (one connection per distinct server,
//!   shared by every scope),
//! - the pool [`Catalog`] (namespaced tools, permissions, revisions) and an
//!   overlay per view that registers capabilities of its own,
//! - the [`SkillManagerCap`] with its watcher and the skill-embedded servers,
//!   built through the pool (RFC lifecycle diagram 3),
//! - one [`Host::shutdown`] in the RFC's order.
//!
//! # What it never does
//! It never speaks a client's protocol (MCP to clients and HTTP are the
//! gateway's) and never prints: front ends render its rows and errors in
//! their own words. It never decides what a model may see or call by hand:
//! a view asks its catalog revision. Its modules depend one way: `host`
//! opens views, views stand on what the host shares, never on `Host`.
//!
//! # Modules
//! - [`host`]: start-up, status and shutdown;
//! - [`view`]: what one scope sees and does;
//! - [`passthrough`]: prompts whole, resource templates, completions,
//!   subscriptions and log levels, relayed to the server that owns them;
//! - [`servers`]: configured servers started in parallel, with events;
//! - [`discovery`]: servers that join and leave while running (edited
//!   configuration files, ToolHive), on the catalog's reconciliation loop;
//! - [`embedded`]: the skill-embedded server factory;
//! - [`health`]: degraded capabilities (server down after a reconnect);
//! - [`policy`]: what a view's model sees and may call, compiled once per
//!   revision into a table every front end asks;
//! - [`guardrails`]: the checks every call passes before dispatch and
//!   every result before the model (sizes, block and redact patterns, a
//!   policy webhook), in the one call path every front end uses;
//! - [`search`]: tool search, deferred loading of tool schemas;
//! - [`plugins`]: the plugins of every host and extpool's own, and every
//!   host's command files, found with no configuration;
//! - [`info`], [`status`], [`skill_roots`]: the rows front ends render.

pub mod connections;
pub mod discovery;
pub mod embedded;
pub mod error;
pub mod guardrails;
pub mod health;
pub mod host;
pub mod info;
pub mod options;
pub mod own;
pub mod passthrough;
pub mod plugins;
pub mod policy;
pub mod sandbox;
pub mod search;
pub mod server_logs;
pub mod servers;
mod shared;
pub mod skill_roots;
pub mod sources;
pub mod status;
pub mod view;

pub use connections::{ServerConnection, ShownState};
pub use discovery::{DiscoverySource, DiscoveryStatus};
pub use error::HostError;
pub use guardrails::{GuardrailError, Guardrails, Verdict};
pub use health::{Degraded, Health, HealthEvent};
pub use host::{Host, SKILLS_ID};
pub use info::{
    ArgInfo, BUILTIN, CommandInfo, DirectoryInfo, InstructionInfo, ModelTool, ResourceInfo,
    SkillInfo, SourceInfo, SourcesReport, ToolDetails, ToolInfo,
};
pub use options::{
    ConfigOverrides, ConfigReload, ConfigSource, DiscoveryOptions, HostOptions, PluginOptions,
    ServerSelection, ToolHiveOptions,
};
pub use own::OwnEndpoints;
pub use passthrough::{ResourceUpdate, TemplateInfo};
pub use policy::{CatalogFilter, Grants, Naming, Refusal, Resolved, Row, ToolTable, ViewPolicy};
pub use search::{DeferralConfig, SearchableTool, ToolIndex};
pub use skill_roots::SkillRootReport;
pub use status::{HostStatus, ServerEvent, ServerInfo, ServerState};
pub use view::{GuardedCall, HostEvent, Pin, RELATED_TASK, ToolCall, View, describe, model_tools};

pub use extpool_catalog::{self as catalog, Catalog, CatalogRevision, CatalogStatus};
pub use extpool_config::{self as config, ExtpoolConfig, Loaded, McpServerConfig, Places};
pub use extpool_core::registry::ShutdownReport;
pub use extpool_core::{
    self as core, CallClient, CallContext, Capability, CapabilityKind, ChangeEvent, ChangeKind,
    CommandEntry, ContentPart, ExtensionError, ExtensionRegistry, InputRound, McpResource,
    ProgressUpdate, ResourceBody, ResourceContent, Scope, ScopeLevel, SkillEntry, ToolEntry,
    ToolResult,
};
pub use extpool_mcp::{self as mcp, McpServerCap, SessionConnectionPool};
pub use extpool_sandbox::SandboxProfile;
pub use extpool_skills::{self as skills, SkillManagerCap};
