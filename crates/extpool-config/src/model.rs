//! The `extpool.yaml` schema.
//!
//! ```yaml
//! mcp_servers:            # name → McpServerConfig (extpool-mcp)
//!   github:
//!     url: https://api.githubcopilot.com/mcp/
//!     headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}
//! skills:
//!   paths: [./skills]     # relative to this file
//!   default_roots: true   # also every host's skill folders (project and user)
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
//! gateway:                # `extpool serve`'s callers
//!   auth:
//!     issuer: https://idp.example          # access tokens of this identity provider
//!     audience: https://gw.example         # what they must be for (default: http://LISTEN)
//!     claims: [groups, email]              # kept on the principal (default [groups])
//!     operator: groups=operators           # what makes a principal an operator
//!     scopes: [openid, groups]             # advertised to clients before they log in
//!     client_id: extpool-gateway           # the gateway's own client at the issuer (token exchange)
//!     client_secret: ${GATEWAY_CLIENT_SECRET}
//!   limits:
//!     sessions_per_principal: 256          # MCP and durable sessions one caller holds, of each kind
//!   rate_limits:          # each caller's own buckets (token buckets)
//!     calls_per_minute: 600                # every tool together
//!     burst: 60                            # calls at once beyond the rate
//!     tools:
//!       - match: "mcp__github__create*"
//!         calls_per_minute: 10
//!         burst: 2
//! guardrails:             # every tool call and result, in the host's call path
//!   max_argument_bytes: 65536
//!   max_result_bytes: 1048576
//!   block: [{pattern: "rm\\s+-rf", tools: "mcp__shell__*"}]
//!   redact: [{name: openai-key, pattern: "sk-[A-Za-z0-9]{20,}"}]
//!   webhook: {url: https://policy.example/check, timeout_ms: 2000, fail: closed}
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtpoolConfig {
    /// MCP servers by name (the rule of `extpool_core::name`: `[A-Za-z0-9_]+`
    /// without `__` or an edge `_`, at most 64 bytes; unique ignoring case).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Where skills come from and how they are checked.
    #[serde(default)]
    pub skills: SkillsConfig,
    /// Which plugins are served besides extpool's own.
    #[serde(default, skip_serializing_if = "PluginsConfig::is_default")]
    pub plugins: PluginsConfig,
    /// Where command files come from.
    #[serde(default, skip_serializing_if = "CommandsConfig::is_default")]
    pub commands: CommandsConfig,
    /// Which catalog names may be advertised and called.
    #[serde(default)]
    pub permissions: PermissionsConfig,
    /// Limits of the extension host.
    #[serde(default)]
    pub extensions: ExtensionsConfig,
    /// Servers found while serving: configuration edits and ToolHive.
    #[serde(default)]
    pub discovery: DiscoveryConfig,
    /// Who may call `extpool serve`, and as whom.
    #[serde(default, skip_serializing_if = "GatewayConfig::is_default")]
    pub gateway: GatewayConfig,
    /// Checks of every tool call before it is dispatched and of every
    /// result before it reaches the model (none when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrails: Option<GuardrailsConfig>,
}

/// The `guardrails:` section: what every tool call and result passes
/// through in the host's call path — the gateway's, the agent library's
/// and the command line's alike — after the permission rules and before
/// the model. The patterns' and the webhook URL's rules are
/// [`crate::guardrails`]'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardrailsConfig {
    /// A call whose arguments' JSON is larger is blocked (before any
    /// pattern or the webhook sees it).
    #[serde(default = "default_max_argument_bytes")]
    pub max_argument_bytes: u64,
    /// A result whose text and structured content are larger together is
    /// blocked (before any pattern or the webhook sees it).
    #[serde(default = "default_max_result_bytes")]
    pub max_result_bytes: u64,
    /// A call is blocked when its arguments match one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block: Vec<BlockRule>,
    /// Matches in results are replaced by `[REDACTED:<name>]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redact: Vec<RedactRule>,
    /// An external policy, asked before each call and about each result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookConfig>,
}

impl Default for GuardrailsConfig {
    fn default() -> Self {
        Self {
            max_argument_bytes: default_max_argument_bytes(),
            max_result_bytes: default_max_result_bytes(),
            block: Vec::new(),
            redact: Vec::new(),
            webhook: None,
        }
    }
}

/// One `guardrails.block` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockRule {
    /// A regular expression; a call whose arguments match it is blocked.
    pub pattern: String,
    /// Only calls of these catalog names (a name or a glob, as in the
    /// permission rules); every call when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
}

/// One `guardrails.redact` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactRule {
    /// What the replacement says: `[REDACTED:<name>]`.
    pub name: String,
    /// A regular expression; each match in a result is replaced.
    pub pattern: String,
}

/// The `guardrails.webhook` entry: an external policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Where it is asked: `https://`, or `http://` on loopback. `${VAR}`s
    /// are resolved when extpool starts.
    pub url: String,
    /// The longest one question may take, in milliseconds (1 to 30,000).
    #[serde(default = "default_webhook_timeout_ms")]
    pub timeout_ms: u64,
    /// What a webhook that fails (no answer in time, an error, an answer
    /// that is not one) means.
    #[serde(default)]
    pub fail: FailMode,
    /// Headers sent with each question; `${VAR}`s in values are resolved
    /// when extpool starts, as a server's headers are.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// What a failing guardrail webhook means.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    /// The call (or result) is blocked.
    #[default]
    Closed,
    /// The call (or result) passes, and the failure is logged.
    Open,
}

impl FailMode {
    /// The word the configuration writes (`closed`, `open`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailMode::Closed => "closed",
            FailMode::Open => "open",
        }
    }
}

fn default_max_argument_bytes() -> u64 {
    crate::guardrails::DEFAULT_MAX_ARGUMENT_BYTES
}
fn default_max_result_bytes() -> u64 {
    crate::guardrails::DEFAULT_MAX_RESULT_BYTES
}
fn default_webhook_timeout_ms() -> u64 {
    crate::guardrails::DEFAULT_WEBHOOK_TIMEOUT_MS
}

/// The `gateway:` section: what `extpool serve` asks of its callers
/// (its flags win over it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// Identities: the access tokens of an identity provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<GatewayAuthConfig>,
    /// How many tool calls each caller may make.
    #[serde(default, skip_serializing_if = "RateLimitsConfig::is_default")]
    pub rate_limits: RateLimitsConfig,
    /// What one caller may hold.
    #[serde(default, skip_serializing_if = "GatewayLimitsConfig::is_default")]
    pub limits: GatewayLimitsConfig,
}

/// The `gateway.limits:` section: what one caller (a principal: a token's
/// subject, an API key; without identities, the gateway's one caller) may
/// hold, so no caller takes what the others need.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayLimitsConfig {
    /// Most sessions one caller holds, of each kind: MCP sessions on a
    /// replica, durable sessions in the store (unset: the gateway's
    /// default, 256; `extpool serve --sessions-per-principal` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions_per_principal: Option<u32>,
}

impl GatewayLimitsConfig {
    /// Whether nothing is set.
    pub fn is_default(&self) -> bool {
        *self == GatewayLimitsConfig::default()
    }
}

/// The `gateway.rate_limits:` section: token buckets, each caller's own
/// (a caller is a principal: a token's subject, an API key; without
/// identities, the gateway's one caller).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitsConfig {
    /// Tool calls a minute each caller may make in all (unset: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_minute: Option<u32>,
    /// Calls a caller may make at once beyond the rate (default: a tenth
    /// of a minute's calls, at least one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// Limits on some tools, each caller's own; a call takes a token from
    /// every bucket whose rule matches it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolRateLimit>,
}

impl RateLimitsConfig {
    /// Whether no limit is set.
    pub fn is_default(&self) -> bool {
        *self == RateLimitsConfig::default()
    }
}

/// One `gateway.rate_limits.tools` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolRateLimit {
    /// The catalog names it limits: a name or a glob (`mcp__github__*`).
    #[serde(rename = "match")]
    pub tools: String,
    /// Calls a minute each caller may make to them.
    pub calls_per_minute: u32,
    /// Calls at once beyond the rate (default as above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

impl GatewayConfig {
    /// Whether nothing is set (the section is left out when written).
    pub fn is_default(&self) -> bool {
        *self == GatewayConfig::default()
    }
}

/// The `gateway.auth:` section (`--auth-issuer` and its companions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayAuthConfig {
    /// The identity provider whose access tokens name who is calling
    /// (OpenID Connect discovery at `ISSUER/.well-known/openid-configuration`).
    pub issuer: String,
    /// What its tokens must be for (`aud`); default: the gateway's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// The token claims kept on the principal, for rules and logs.
    #[serde(default = "default_claims")]
    pub claims: Vec<String>,
    /// `CLAIM=VALUE` that makes a principal an operator (sees and manages
    /// every session, reads /metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// The scopes clients should ask the issuer for (advertised in the
    /// protected-resource metadata and the 401 challenge).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The gateway's own client at the issuer, with which it exchanges
    /// callers' tokens for servers with `oauth.token_exchange` (RFC 8693).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its secret (a `${VAR}` reference: never written in a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

fn default_claims() -> Vec<String> {
    vec!["groups".to_owned()]
}

/// The `discovery:` section: how `extpool serve` finds servers while it
/// runs — in edited configuration files and in ToolHive's running
/// workloads — on the catalog's one reconciliation loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// The `plugins:` section. The plugins extpool installed itself
/// (`extpool plugins add`) are always served, enabled ones only.
///
/// ```yaml
/// plugins:
///   discover: true        # also the plugins Claude Code, Codex and Gemini CLI installed
///   confine: true         # every plugin's stdio servers run under its default profile
///   sandbox:              # per plugin (its name, or its id `name@marketplace`)
///     kit: {network: ["api.github.com:443"], env: [GITHUB_TOKEN]}   # widens the default
///     my-own: false       # runs unconfined, as the user
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// Also serve the plugins Claude Code, Codex and Gemini CLI installed
    /// and enabled, read from their own records under the home folder
    /// (`~/.claude/plugins`, `~/.codex/config.toml`, `~/.gemini/extensions`).
    #[serde(default = "yes")]
    pub discover: bool,
    /// Run every plugin's stdio servers confined by its default permission
    /// profile (read its own folder and the project, write its data
    /// folder, no network); `false` runs them as the user, unconfined,
    /// except those `sandbox` confines by name.
    #[serde(default = "yes")]
    pub confine: bool,
    /// Per plugin, by its name or id: a profile that widens its default
    /// one (more paths, a network, variables, limits), `false` to run its
    /// servers unconfined, `true` for the default profile.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sandbox: BTreeMap<String, crate::sandbox::PluginSandbox>,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        Self {
            discover: true,
            confine: true,
            sandbox: BTreeMap::new(),
        }
    }
}

impl PluginsConfig {
    /// True when nothing differs from the default (not shown by `config show`).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The `commands:` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandsConfig {
    /// Serve every host's command files: the project's
    /// `.claude/commands` and `.gemini/commands`, then the user's
    /// `~/.claude/commands`, `~/.codex/prompts` and `~/.gemini/commands`.
    #[serde(default = "yes")]
    pub default_roots: bool,
}

impl Default for CommandsConfig {
    fn default() -> Self {
        Self {
            default_roots: true,
        }
    }
}

impl CommandsConfig {
    /// True when nothing differs from the default (not shown by `config show`).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// The `skills:` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    /// Extra skill roots (directories holding `<name>/SKILL.md`), relative
    /// to the config file. They take precedence over the default roots.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Also search the default roots: every host's skill folder
    /// (`.agents/skills`, `.claude/skills`, `.codex/skills`,
    /// `.gemini/skills`, `.github/skills`, `.cursor/skills`) from the git
    /// root down to the working directory, then the user's
    /// (`~/.agents/skills`, `~/.claude/skills`, `~/.codex/skills`,
    /// `~/.gemini/skills`, `~/.copilot/skills`, `~/.cursor/skills`).
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
