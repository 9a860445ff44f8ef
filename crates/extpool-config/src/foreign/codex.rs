//! Codex's `config.toml` (`~/.codex/config.toml`, project `.codex/config.toml`).
//!
//! ```toml
//! [mcp_servers.docs]
//! command = "npx"
//! args = ["-y", "mcp-server"]
//! env = { "API_KEY" = "value" }
//! env_vars = ["OTHER_KEY"]          # forwarded from the environment
//! cwd = "/path"
//! startup_timeout_sec = 20
//! tool_timeout_sec = 45
//! enabled = true
//! disabled_tools = ["delete"]
//!
//! [mcp_servers.figma]
//! url = "https://mcp.figma.com/mcp"
//! bearer_token_env_var = "FIGMA_TOKEN"
//! http_headers = { "X-Team" = "core" }
//! env_http_headers = { "X-Key" = "FIGMA_KEY" }
//! ```
//!
//! `bearer_token_env_var` becomes `Authorization: Bearer ${VAR}`,
//! `env_http_headers` become `${VAR}` header values, `env_vars` become
//! `VAR: ${VAR:-}` entries, seconds become milliseconds, and
//! `disabled_tools` become `permissions.deny` rules. Every other key of the
//! file (model, sandbox, profiles, …) is Codex's own and is not read.

use std::collections::BTreeMap;

use extpool_mcp::config::McpServerConfig;
use serde::Deserialize;

use super::typed::StrictString;
use super::{ForeignConfig, ForeignContext, command_and_args, convert_vars, read_entry};
use crate::diagnostics::{Diagnostic, Severity};
use crate::tree::Node;

const KNOWN: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled",
    "enabled_tools",
    "disabled_tools",
];

const QUIET: &[&str] = &[
    "required",
    "oauth",
    "scopes",
    "default_tools_approval_mode",
    "tools",
    "experimental_environment",
];

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum EnvVar {
    Name(String),
    Object { name: String },
}

/// A server table, each string as strict as Codex is ([`StrictString`]).
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    command: Option<StrictString>,
    #[serde(default)]
    args: Vec<StrictString>,
    #[serde(default)]
    env: BTreeMap<String, StrictString>,
    #[serde(default)]
    env_vars: Vec<EnvVar>,
    #[serde(default)]
    cwd: Option<StrictString>,
    #[serde(default)]
    url: Option<StrictString>,
    #[serde(default)]
    bearer_token_env_var: Option<StrictString>,
    #[serde(default)]
    http_headers: BTreeMap<String, StrictString>,
    #[serde(default)]
    env_http_headers: BTreeMap<String, StrictString>,
    #[serde(default)]
    startup_timeout_sec: Option<f64>,
    #[serde(default)]
    startup_timeout_ms: Option<u64>,
    #[serde(default)]
    tool_timeout_sec: Option<f64>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    enabled_tools: Option<Vec<StrictString>>,
    #[serde(default)]
    disabled_tools: Vec<StrictString>,
}

/// Reads the `mcp_servers` tables of a Codex `config.toml`.
pub fn read(root: &Node, ctx: &ForeignContext) -> ForeignConfig {
    let mut out = ForeignConfig::default();
    let Some(servers) = root.entry("mcp_servers") else {
        out.diagnostics.push(ctx.diag(
            Severity::Warning,
            root.pos,
            "",
            "no [mcp_servers.<name>] tables: this file defines no MCP servers",
        ));
        return out;
    };
    let Some(entries) = servers.value.as_map() else {
        out.diagnostics.push(ctx.diag(
            Severity::Error,
            servers.key_pos,
            "mcp_servers",
            format!(
                "expected a table of servers, found {}",
                servers.value.value.kind()
            ),
        ));
        return out;
    };
    for e in entries {
        let path = format!("mcp_servers.{}", e.key);
        if let Some(config) = convert(ctx, &e.value, &path, &e.key, &mut out) {
            out.push_server(ctx, &e.key, e.key_pos, &path, config);
        }
    }
    out
}

fn millis(secs: f64) -> u64 {
    (secs.max(0.0) * 1000.0).round() as u64
}

fn convert(
    ctx: &ForeignContext,
    node: &Node,
    path: &str,
    original_name: &str,
    out: &mut ForeignConfig,
) -> Option<McpServerConfig> {
    let entry: Entry = read_entry(ctx, node, path, (KNOWN, QUIET), &mut out.diagnostics)?;
    let pos_of = |key: &str| node.get(key).map_or(node.pos, |n| n.pos);
    let diags = &mut out.diagnostics;
    let conv = |s: &str, key: &str, diags: &mut Vec<Diagnostic>| {
        convert_vars(s, ctx, pos_of(key), &format!("{path}.{key}"), diags)
    };
    let mut config = McpServerConfig {
        enabled: entry.enabled.unwrap_or(true),
        ..McpServerConfig::default()
    };
    (config.command, config.args) = command_and_args(
        ctx,
        node,
        path,
        (
            entry.command.as_ref().map(StrictString::as_str),
            entry.args.iter().map(StrictString::as_str),
        ),
        diags,
    );
    for (k, v) in &entry.env {
        let v = conv(v.as_str(), "env", diags);
        config.env.insert(k.clone(), v);
    }
    for var in &entry.env_vars {
        let name = match var {
            EnvVar::Name(n) | EnvVar::Object { name: n } => n,
        };
        config
            .env
            .entry(name.clone())
            .or_insert_with(|| format!("${{{name}:-}}"));
    }
    config.cwd = entry.cwd.as_ref().map(|c| conv(c.as_str(), "cwd", diags));
    config.url = entry.url.as_ref().map(|u| conv(u.as_str(), "url", diags));
    for (k, v) in &entry.http_headers {
        let v = conv(v.as_str(), "http_headers", diags);
        config.headers.insert(k.clone(), v);
    }
    for (k, var) in &entry.env_http_headers {
        let var = var.as_str();
        config.headers.insert(k.clone(), format!("${{{var}}}"));
    }
    if let Some(var) = entry
        .bearer_token_env_var
        .as_ref()
        .map(StrictString::as_str)
    {
        config
            .headers
            .insert("Authorization".into(), format!("Bearer ${{{var}}}"));
    }
    config.startup_timeout_ms = entry
        .startup_timeout_ms
        .or(entry.startup_timeout_sec.map(millis));
    config.request_timeout_ms = entry.tool_timeout_sec.map(millis);
    let catalog_server = crate::model::sanitize_server_name(original_name);
    for tool in &entry.disabled_tools {
        let tool = tool.as_str();
        out.deny
            .push(extpool_catalog::names::compose(&catalog_server, tool));
    }
    if entry.enabled_tools.is_some() {
        out.diagnostics.push(ctx.diag(
            Severity::Warning,
            pos_of("enabled_tools"),
            path,
            "\"enabled_tools\" is not imported: extpool permissions are global; add `permissions.deny` rules for the tools you do not want",
        ));
    }
    ctx.with_transport(config, node, path, &mut out.diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locate::Origin;
    use crate::tree::parse_toml;

    /// `text` read as a Codex `config.toml` in workspace `/ws`.
    fn read_text(text: &str) -> ForeignConfig {
        let ctx = ForeignContext {
            file: "config.toml".into(),
            origin: Origin::Codex,
            workspace: "/ws".into(),
            cwd: "/ws".into(),
            strict: false,
        };
        read(&parse_toml(text).unwrap(), &ctx)
    }

    #[test]
    fn reads_codex_servers() {
        let text = r#"
model = "o3"

[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-server", "${literal}"]
env = { "API_KEY" = "value" }
env_vars = ["OTHER", { name = "REMOTE", source = "remote" }]
startup_timeout_sec = 20
tool_timeout_sec = 4.5
disabled_tools = ["delete"]

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
env_http_headers = { "X-Key" = "FIGMA_KEY" }
enabled = false
"#;
        let out = read_text(text);
        assert!(out.diagnostics.is_empty(), "{:#?}", out.diagnostics);
        let docs = &out.servers[0].config;
        assert_eq!(docs.args[2], "$${literal}");
        assert_eq!(docs.env["OTHER"], "${OTHER:-}");
        assert_eq!(docs.env["REMOTE"], "${REMOTE:-}");
        assert_eq!(docs.startup_timeout_ms, Some(20_000));
        assert_eq!(docs.request_timeout_ms, Some(4_500));
        let figma = &out.servers[1].config;
        assert_eq!(figma.headers["Authorization"], "Bearer ${FIGMA_TOKEN}");
        assert_eq!(figma.headers["X-Key"], "${FIGMA_KEY}");
        assert!(!figma.enabled);
        assert_eq!(out.deny, ["mcp__docs__delete"]);
    }

    #[test]
    fn a_number_or_boolean_where_a_string_belongs_is_a_located_error() {
        let text = "[mcp_servers.a]\ncommand = 7\n\n[mcp_servers.b]\nurl = false\n\n[mcp_servers.ok]\ncommand = \"x\"\n";
        let out = read_text(text);
        let names: Vec<_> = out.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ok"]);
        let msgs: Vec<String> = out.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            msgs,
            [
                "config.toml:2:11: error: mcp_servers.a.command: expected a string, found an integer; this server is skipped",
                "config.toml:5:7: error: mcp_servers.b.url: expected a string, found a boolean; this server is skipped",
            ]
        );
    }
}
