//! The `extpool.yaml` schema.
//!
//! ```yaml
//! mcp_servers:            # name → McpServerConfig (extpool-mcp)
//!   github:
//!     url: https://api.githubcopilot.com/mcp/
//!     headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}
//! skills:
//!   paths: [./skills]     # relative to this file
//!   default_roots: true   # also .agents/skills, .claude/skills (project and user)
//!   watch: true
//!   validation: lenient   # or strict
//! permissions:
//!   allow: ["mcp__github__get*"]
//!   deny: ["mcp__github__delete*"]
//!   default: allow        # or deny
//! extensions:
//!   max_composition_depth: 3
//!   max_clients: 20
//!   result_limits: {max_text_bytes: 100000, max_structured_bytes: 100000}
//!   resource_tools: true  # ListMcpResources / ReadMcpResource
//!   prompt_commands: true # MCP prompts as /mcp__<server>__<prompt>
//!   notifications: {log_per_second: 100, progress_per_second: 100,
//!                   list_changed_ms: 100, requests_in_flight: 16}
//! discovery:              # while `extpool serve` runs
//!   watch_config: true    # edits of the configuration files add, change, remove servers
//!   interval_ms: 10000    # how often ToolHive is asked
//!   timeout_ms: 10000     # one consultation at most
//!   backoff_initial_ms: 1000
//!   backoff_max_ms: 60000
//!   max_concurrent: 4     # consultations at once
//!   toolhive:
//!     enabled: true
//!     url: http://127.0.0.1:8080   # ToolHive's API (`thv serve`); else TOOLHIVE_API_URL
//!     group: default               # only this group's workloads
//! ```
//!
//! Every struct refuses unknown keys so a typo is reported (with a "did you
//! mean") instead of silently ignored. The server entry itself is
//! [`McpServerConfig`], owned by `extpool-mcp`: this crate never redefines it.

use std::collections::BTreeMap;

pub use extpool_catalog::JqLimits;
pub use extpool_catalog::permissions::{DefaultPolicy, PermissionsConfig};
pub use extpool_catalog::shaping::ResultLimits;
pub use extpool_mcp::NotificationLimits;
use extpool_mcp::config::McpServerConfig;
use serde::{Deserialize, Serialize};

/// A whole `extpool.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtpoolConfig {
    /// MCP servers by name (the rule of `extpool_core::name`: `[A-Za-z0-9_]+`
    /// without `__` or an edge `_`, at most 64 bytes; unique ignoring case).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Where skills come from and how they are checked.
    #[serde(default)]
    pub skills: SkillsConfig,
    /// Which catalog names may be advertised and called.
    #[serde(default)]
    pub permissions: PermissionsConfig,
    /// Limits of the extension host.
    #[serde(default)]
    pub extensions: ExtensionsConfig,
    /// Servers found while serving: configuration edits and ToolHive.
    #[serde(default)]
    pub discovery: DiscoveryConfig,
}

/// The `discovery:` section: how `extpool serve` finds servers while it
/// runs — in edited configuration files and in ToolHive's running
/// workloads — on the catalog's one reconciliation loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryConfig {
    /// Apply edits of the configuration files' servers while serving.
    #[serde(default = "yes")]
    pub watch_config: bool,
    /// How often a polled source (ToolHive) is consulted, in milliseconds.
    #[serde(default = "ten_seconds")]
    pub interval_ms: u64,
    /// The longest one consultation may take, in milliseconds.
    #[serde(default = "ten_seconds")]
    pub timeout_ms: u64,
    /// The first wait after a failed consultation or candidate; doubles
    /// up to `backoff_max_ms`.
    #[serde(default = "one_second")]
    pub backoff_initial_ms: u64,
    /// The longest wait after failures.
    #[serde(default = "one_minute")]
    pub backoff_max_ms: u64,
    /// Sources consulted at the same time.
    #[serde(default = "four")]
    pub max_concurrent: usize,
    /// ToolHive's running MCP servers.
    #[serde(default)]
    pub toolhive: ToolHiveConfig,
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self {
            watch_config: true,
            interval_ms: ten_seconds(),
            timeout_ms: ten_seconds(),
            backoff_initial_ms: one_second(),
            backoff_max_ms: one_minute(),
            max_concurrent: four(),
            toolhive: ToolHiveConfig::default(),
        }
    }
}

/// The `discovery.toolhive:` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolHiveConfig {
    /// Poll ToolHive's workloads API (`extpool serve`; `--toolhive=false`).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// ToolHive's API (`thv serve`); unset: `TOOLHIVE_API_URL`, else
    /// `http://127.0.0.1:8080`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Only the workloads of this group (`--toolhive-group`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl Default for ToolHiveConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            url: None,
            group: None,
        }
    }
}

/// The `skills:` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    /// Extra skill roots (directories holding `<name>/SKILL.md`), relative
    /// to the config file. They take precedence over the default roots.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Also search the default roots: `.agents/skills` and `.claude/skills`
    /// from the git root down to the working directory, then
    /// `~/.agents/skills` and `~/.claude/skills`.
    #[serde(default = "yes")]
    pub default_roots: bool,
    /// Reload skills when their files change.
    #[serde(default = "yes")]
    pub watch: bool,
    /// How strictly SKILL.md files are checked when loading.
    #[serde(default)]
    pub validation: ValidationMode,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            paths: Vec::new(),
            default_roots: true,
            watch: true,
            validation: ValidationMode::default(),
        }
    }
}

/// How SKILL.md files are checked when loading: owned by `extpool-skills`
/// (`lenient` or `strict` in the file).
pub use extpool_skills::ValidationMode;

/// The `extensions:` section: limits of the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionsConfig {
    /// Nesting depth (root-inclusive) beyond which composition is warned about (RFC: 3).
    #[serde(default = "three")]
    pub max_composition_depth: usize,
    /// Live MCP clients the connection pool keeps at most (RFC: 20).
    #[serde(default = "twenty")]
    pub max_clients: usize,
    /// Result size limits: plain text beyond `max_text_bytes` is truncated
    /// with a marker; structured results beyond `max_structured_bytes` are
    /// refused with advice to paginate, filter or use a jq query.
    #[serde(default)]
    pub result_limits: ResultLimits,
    /// Offer `ListMcpResources` / `ReadMcpResource` when any server has resources.
    #[serde(default = "yes")]
    pub resource_tools: bool,
    /// Offer MCP prompts as `/mcp__<server>__<prompt>` commands.
    #[serde(default = "yes")]
    pub prompt_commands: bool,
    /// The budgets of the jq sandbox (`CallMcpWithQuery`): time, steps,
    /// the largest value a filter may build or walk, and the total built.
    #[serde(default)]
    pub jq: JqLimits,
    /// What each server connection may send on its own: log messages and
    /// progress a second, how often a `list_changed` of a kind passes, how
    /// many of its requests may wait for an answer.
    #[serde(default)]
    pub notifications: NotificationLimits,
}

impl Default for ExtensionsConfig {
    fn default() -> Self {
        Self {
            max_composition_depth: 3,
            max_clients: 20,
            result_limits: ResultLimits::default(),
            resource_tools: true,
            prompt_commands: true,
            jq: JqLimits::default(),
            notifications: NotificationLimits::default(),
        }
    }
}

fn yes() -> bool {
    true
}
fn three() -> usize {
    3
}
fn twenty() -> usize {
    20
}
fn four() -> usize {
    4
}
fn one_second() -> u64 {
    1_000
}
fn ten_seconds() -> u64 {
    10_000
}
fn one_minute() -> u64 {
    60_000
}

/// The server-name rule and its sanitizer, owned by `extpool_core::name`
/// (re-exported so config readers keep one import).
pub use extpool_core::{check_server_name, is_valid_server_name, sanitize_server_name};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_valid_server_name("github_2"));
        assert!(!is_valid_server_name("git-hub"));
        assert!(!is_valid_server_name(""));
        assert_eq!(
            sanitize_server_name("sequential-thinking"),
            "sequential_thinking"
        );
        assert_eq!(sanitize_server_name("a.b c"), "a_b_c");
        assert_eq!(sanitize_server_name("é"), "server");
        assert!(!is_valid_server_name("a__b"));
    }

    #[test]
    fn defaults() {
        let c = ExtpoolConfig::default();
        assert_eq!(c.extensions.max_clients, 20);
        assert_eq!(c.extensions.max_composition_depth, 3);
        assert!(c.skills.default_roots);
        assert_eq!(c.permissions.default, DefaultPolicy::Allow);
        assert!(c.discovery.watch_config && c.discovery.toolhive.enabled);
        assert_eq!(c.discovery.interval_ms, 10_000);
    }

    #[test]
    fn the_discovery_section_reads_and_refuses_typos() {
        let root = crate::tree::parse_yaml(
            "discovery:\n  interval_ms: 500\n  toolhive:\n    enabled: false\n    group: dev\n",
        )
        .unwrap();
        let c: ExtpoolConfig = crate::de::from_node(&root).unwrap();
        assert_eq!(c.discovery.interval_ms, 500);
        assert!(!c.discovery.toolhive.enabled);
        assert_eq!(c.discovery.toolhive.group.as_deref(), Some("dev"));
        assert!(c.discovery.watch_config);
        let root = crate::tree::parse_yaml("discovery:\n  toolhive:\n    gruop: dev\n").unwrap();
        let err = crate::de::from_node::<ExtpoolConfig>(&root).unwrap_err();
        assert!(err.to_string().contains("gruop"), "{err}");
    }
}
