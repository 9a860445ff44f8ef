//! extpool-plugins: every extension the user already has, read.
//!
//! In 2026 extensions reach people as plugins — one folder bundling
//! skills, slash commands, MCP servers, subagents and hooks, installed by
//! a host's own CLI — and as command files beside their skills. This crate
//! reads them, each format as its own host reads it, and hands the host
//! library what they provide:
//!
//! - [`read_plugin`] / [`validate`]: one plugin folder in any of the four
//!   formats ([`Format`]): Agent Plugins 1.0 ([`agent`]), Claude Code,
//!   Codex and Gemini CLI ([`hosts`]);
//! - [`installed`]: what Claude Code, Codex and Gemini CLI installed and
//!   enabled, from their own records under `$HOME`;
//! - [`command`]: command files as a source of their own
//!   ([`LocalCommandSource`], the RFC's `CommandResource` with a local
//!   client), rendered by their host's rules;
//! - [`discover()`]: everything above from `$HOME` and a project folder,
//!   with no configuration, good entries and diagnostics together;
//! - [`marketplace`]: marketplace files (`.claude-plugin/marketplace.json`,
//!   `.agents/plugins/marketplace.json`);
//! - [`store`]: extpool's own plugin manager (installs into extpool's
//!   data directory, with a lock record).
//!
//! Nothing here runs anything a plugin contains: not its servers (the
//! host starts those, for enabled plugins only), not its hooks (listed),
//! not the shell lines or file inclusions of its commands (shown as text).
//! Every path of a plugin stays inside its root, and every file, folder
//! and list an outside party controls is bounded ([`Limits`]).

pub mod agent;
pub mod agents;
mod changes;
pub mod command;
pub mod diag;
pub mod discover;
mod foreign;
mod fsx;
pub mod hooks;
pub mod hosts;
pub mod installed;
mod json;
pub mod limits;
pub mod marketplace;
pub mod names;
pub mod plugin;
mod read;
pub mod served;
mod skills;
pub mod store;
pub mod validate;

pub use agents::AgentSpec;
pub use command::{CommandOrigin, CommandSpec, Dialect, LocalCommandSource, RenderError, render};
pub use diag::{Diagnostic, DiagnosticKind, Severity};
pub use discover::{DiscoverRequest, Discovery, discover};
pub use hooks::HookSpec;
pub use installed::{Host, InstalledPlugin};
pub use limits::Limits;
pub use marketplace::Marketplace;
pub use plugin::{
    Format, McpOutcome, Plugin, PluginServer, PluginSkill, ReadOptions, Rejection, Transport,
    qualified, server_name,
};
pub use read::read_plugin;
pub use served::{PluginSkills, skill_uri};
pub use store::{Store, StoreError};
pub use validate::{Outcome, Report, validate, validate_with};
