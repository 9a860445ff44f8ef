//! extpool-config: what extpool reads before it starts anything.
//!
//! * [`model`]: the `extpool.yaml` schema ([`ExtpoolConfig`]); a server
//!   entry is `extpool_mcp::config::McpServerConfig`.
//! * [`foreign`]: the MCP configs users already have (Claude Code,
//!   Cursor, Claude Desktop, VS Code, Codex), read unchanged.
//! * [`locate`]: where configs are found without `--config`.
//! * [`read`]: reading one file (regular files only, size-limited, UTF-8).
//! * [`load`]: reading, checking and merging into a [`Loaded`] configuration.
//! * [`expand`]: `${VAR}` / `${VAR:-default}` expansion, applied only when a
//!   server is resolved to be started.
//! * [`diagnostics`]: `file:line:column` findings with "did you mean".
//! * [`import`]: writing the effective configuration back out as YAML.
//! * [`edit`]: located, comment-preserving edits: a server added to or
//!   removed from `extpool.yaml`, an agent's own file wired to a gateway.
//! * [`guardrails`]: the rules of the `guardrails:` section (patterns,
//!   webhook URLs, bounds) that `config check` and the host share.
//!
//! Every file is parsed into a located tree ([`tree`]) and the model is
//! deserialized from it ([`de`]), so every error names file, line and
//! column. This crate never prints and never resolves a secret into text
//! meant for output.

pub mod de;
pub mod diagnostics;
pub mod edit;
pub mod error;
pub mod expand;
pub mod foreign;
pub mod guardrails;
pub mod import;
pub mod load;
pub mod locate;
pub mod model;
pub mod read;
pub mod runtime;
pub mod sandbox;
pub mod schema;
pub mod secrets;
pub mod tree;
pub mod validate;

pub use diagnostics::{Diagnostic, Severity};
pub use error::{ConfigError, ResolveError};
pub use import::{RenderMode, Rendered, render};
pub use load::{
    LoadRequest, Loaded, ServerSource, SourceFile, load, load_file, load_strict, load_text,
    load_value, process_env, resolve_paths,
};
pub use locate::{ConfigFormat, Origin, Places};
pub use model::{
    BlockRule, DefaultPolicy, DiscoveryConfig, ExtensionsConfig, ExtpoolConfig, FailMode,
    GatewayAuthConfig, GatewayConfig, GatewayLimitsConfig, GuardrailsConfig, PermissionsConfig,
    RateLimitsConfig, RedactRule, SkillsConfig, ToolHiveConfig, ToolRateLimit, ValidationMode,
    WebhookConfig,
};

/// The server entry type, re-exported from `extpool-mcp`.
pub use extpool_mcp::config::McpServerConfig;
