//! How to reach one MCP server, as written in configuration.
//!
//! One flat struct serves every config format (extpool.yaml, `.mcp.json`,
//! VS Code, Codex): `command` makes a stdio server, `url` a streamable HTTP
//! one. [`McpServerConfig::transport`] checks the combination. The struct is
//! `Hash + Eq` because the connection pool keys live clients by it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A server's configuration (without its name, which is the map key).
///
/// `Debug` prints the names of `env` entries and `headers` but never their
/// values (nor `secrets`): they may hold credentials (an `Authorization`
/// header, an API key).
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Executable of a stdio server (run directly, never through a shell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment for the child.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory of the child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// URL of a streamable HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Extra HTTP headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Allow plain HTTP to a non-loopback host for this server.
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure_http: bool,
    /// Per-request timeout in milliseconds (default 60 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout_ms: Option<u64>,
    /// Connect + initialize timeout in milliseconds (default 30 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<u64>,
    /// Largest message accepted from this server, in bytes (default
    /// 16 MiB); a larger answer fails its request at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_message_bytes: Option<u64>,
    /// Connect on first call instead of at toolset compilation.
    #[serde(default, skip_serializing_if = "is_false")]
    pub lazy: bool,
    /// Tools declared statically (used when `lazy`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<StaticTool>,
    /// Reconnect policy after a dropped connection.
    #[serde(default, skip_serializing_if = "ReconnectPolicy::is_default")]
    pub reconnect: ReconnectPolicy,
    /// The protocol era spoken to this server (default: the session era).
    #[serde(default, skip_serializing_if = "Protocol::is_default")]
    pub protocol: Protocol,
    /// Environment variables normally withheld (`LD_PRELOAD`, …) that this server may receive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_env: Vec<String>,
    /// The permission profile a stdio server runs under (see
    /// `extpool_sandbox`); without one it runs unconfined, as the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<extpool_sandbox::SandboxProfile>,
    /// Catalog prefix instead of the server name (`mcp__<prefix>__<tool>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Set false to keep the entry but not start it.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub enabled: bool,
    /// OAuth operator profile (HTTP servers): how to obtain, store and
    /// refresh this server's access grant (see `extpool mcp login`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<extpool_auth::OAuthProfile>,
    /// Values substituted for `${VAR}` references when this config was
    /// resolved, and its literal secrets (`--api-key=…`, `--password X`:
    /// what `config show` masks); set by the config loader and the host,
    /// never read from a file. They are masked in everything shown from
    /// the server (its stderr, its error messages), like `env` values.
    #[serde(skip)]
    pub secrets: Vec<String>,
    /// The addresses a remote server's host may be on, checked at every
    /// connection (the name resolved, each address checked, the connection
    /// made to a checked one; no proxy): set by a gateway for the servers
    /// its clients bring, never read from a file. `None`: any (the
    /// configuration's servers are the operator's own).
    #[serde(skip)]
    pub address_rule: Option<extpool_core::address::AddressRule>,
}

impl std::fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |map: &BTreeMap<String, String>| {
            map.keys()
                .map(|k| (k.clone(), "<redacted>"))
                .collect::<BTreeMap<_, _>>()
        };
        f.debug_struct("McpServerConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &redacted(&self.env))
            .field("cwd", &self.cwd)
            .field("url", &self.url)
            .field("headers", &redacted(&self.headers))
            .field("insecure_http", &self.insecure_http)
            .field("request_timeout_ms", &self.request_timeout_ms)
            .field("startup_timeout_ms", &self.startup_timeout_ms)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("lazy", &self.lazy)
            .field("tools", &self.tools)
            .field("reconnect", &self.reconnect)
            .field("protocol", &self.protocol)
            .field("allow_env", &self.allow_env)
            .field("sandbox", &self.sandbox)
            .field("prefix", &self.prefix)
            .field("enabled", &self.enabled)
            .field("oauth", &self.oauth)
            .field(
                "secrets",
                &format_args!("<{} redacted>", self.secrets.len()),
            )
            .field("address_rule", &self.address_rule)
            .finish()
    }
}

/// A tool declared in configuration for lazy servers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StaticTool {
    /// Tool name as the server knows it.
    pub name: String,
    /// Description shown to the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments, as JSON text (default: any object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<String>,
}

/// The MCP protocol era extpool speaks to a server (`protocol:`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum Protocol {
    /// The session era: `initialize` (offering 2025-11-25), then every
    /// request in that session. The default: what servers written before
    /// 2026-07-28 speak, and the only era in which a server may send its
    /// client requests (sampling, elicitation) and keep resource
    /// subscriptions made with `resources/subscribe`.
    #[default]
    #[serde(rename = "session")]
    Session,
    /// The 2026-07-28 era when the server offers it (`server/discover`),
    /// else the session era.
    #[serde(rename = "auto")]
    Auto,
    /// The 2026-07-28 era only (`server/discover`, stateless requests,
    /// `subscriptions/listen`, `input_required`).
    #[serde(rename = "2026-07-28")]
    Stateless,
}

impl Protocol {
    /// True for the default (so it is not printed).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Reconnect attempts after a connection drop; the default is one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconnectPolicy {
    /// How many reconnect attempts (0 disables reconnecting).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Delay before the second attempt, doubled for each further one.
    #[serde(default = "thousand")]
    pub backoff_ms: u64,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            attempts: 1,
            backoff_ms: 1000,
        }
    }
}

impl McpServerConfig {
    /// This config without the fields that only shape how its tools are
    /// published (`prefix`, `lazy`, `tools`, `enabled`): what decides the
    /// connection. The pool keys live clients by it, so two capabilities
    /// whose configs differ only there share one connection.
    pub fn connection_identity(&self) -> McpServerConfig {
        McpServerConfig {
            prefix: None,
            lazy: false,
            tools: Vec::new(),
            enabled: true,
            ..self.clone()
        }
    }
}

impl ReconnectPolicy {
    /// True for the default policy (so it is not printed).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Which transport a config selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// A child process speaking MCP on stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
}

/// The transport half of a config, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport<'a> {
    /// A child process.
    Stdio {
        /// Executable.
        command: &'a str,
        /// Arguments.
        args: &'a [String],
    },
    /// Streamable HTTP.
    Http {
        /// Endpoint URL.
        url: &'a str,
    },
}

/// A config that names neither or both transports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// Neither `command` nor `url`.
    #[error("needs either `command` (stdio) or `url` (streamable HTTP)")]
    Missing,
    /// Both `command` and `url`.
    #[error("has both `command` and `url`; choose one transport")]
    Both,
}

impl McpServerConfig {
    /// A stdio server config.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            enabled: true,
            ..Self::default()
        }
    }

    /// A streamable HTTP server config.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            enabled: true,
            ..Self::default()
        }
    }

    /// The transport this config selects.
    pub fn transport(&self) -> Result<Transport<'_>, TransportError> {
        match (&self.command, &self.url) {
            (Some(command), None) => Ok(Transport::Stdio {
                command,
                args: &self.args,
            }),
            (None, Some(url)) => Ok(Transport::Http { url }),
            (None, None) => Err(TransportError::Missing),
            (Some(_), Some(_)) => Err(TransportError::Both),
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}
fn is_true(b: &bool) -> bool {
    *b
}
fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn thousand() -> u64 {
    1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_env_and_header_values() {
        let mut cfg = McpServerConfig::http("https://x/mcp");
        cfg.headers
            .insert("Authorization".into(), "Bearer s3cr3t".into());
        cfg.env.insert("API_KEY".into(), "k3y".into());
        let dbg = format!("{cfg:?}");
        assert!(
            dbg.contains("Authorization") && dbg.contains("API_KEY"),
            "{dbg}"
        );
        assert!(!dbg.contains("s3cr3t") && !dbg.contains("k3y"), "{dbg}");
    }
}
