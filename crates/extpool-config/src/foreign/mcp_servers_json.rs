//! `mcpServers` JSON: Claude Code (`.mcp.json`, `~/.claude.json`), Cursor
//! (`.cursor/mcp.json`), Claude Desktop (`claude_desktop_config.json`).
//!
//! ```json
//! {"mcpServers": {
//!   "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
//!              "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
//!   "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!          "env": {"DEBUG": "1"}}
//! }}
//! ```

use std::collections::BTreeMap;

use extpool_mcp::config::McpServerConfig;
use serde::Deserialize;

use super::typed::StrictString;
use super::{ForeignConfig, ForeignContext, command_and_args, convert_vars, read_entry};
use crate::diagnostics::{Diagnostic, Severity};
use crate::tree::Node;

/// Keys of a server entry that extpool understands.
const KNOWN: &[&str] = &[
    "type", "command", "args", "env", "cwd", "url", "headers", "disabled", "enabled", "envFile",
];

/// Keys other clients use that have no meaning for extpool (ignored quietly).
const QUIET: &[&str] = &[
    "autoApprove",
    "alwaysAllow",
    "timeout",
    "description",
    "dev",
    "gallery",
    "version",
    "oauth",
];

/// A server entry, each string as strict as the clients that read the
/// file are ([`StrictString`]).
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default, rename = "type")]
    kind: Option<StrictString>,
    #[serde(default)]
    command: Option<StrictString>,
    #[serde(default)]
    args: Vec<StrictString>,
    #[serde(default)]
    env: BTreeMap<String, Option<StrictString>>,
    #[serde(default)]
    cwd: Option<StrictString>,
    #[serde(default)]
    url: Option<StrictString>,
    #[serde(default)]
    headers: BTreeMap<String, StrictString>,
    #[serde(default)]
    disabled: Option<bool>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default, rename = "envFile")]
    env_file: Option<StrictString>,
}

/// Reads an `mcpServers` document. With `claude_user`, also the
/// `projects.<cwd>.mcpServers` entries of `~/.claude.json` (first).
pub fn read(root: &Node, ctx: &ForeignContext, claude_user: bool) -> ForeignConfig {
    let mut out = ForeignConfig::default();
    if root.as_map().is_none() {
        out.diagnostics.push(ctx.diag(
            Severity::Error,
            root.pos,
            "",
            format!(
                "expected a JSON object with \"mcpServers\", found {}",
                root.value.kind()
            ),
        ));
        return out;
    }
    if claude_user {
        let cwd = ctx.cwd.display().to_string();
        if let Some(project) = root.get("projects").and_then(|p| p.get(&cwd))
            && let Some(servers) = project.entry("mcpServers")
        {
            let path = format!("projects[{cwd:?}].mcpServers");
            read_servers(&servers.value, ctx, &path, &mut out);
        }
    }
    match root.entry("mcpServers") {
        Some(servers) => read_servers(&servers.value, ctx, "mcpServers", &mut out),
        None if !claude_user => out.diagnostics.push(ctx.diag(
            Severity::Warning,
            root.pos,
            "",
            "no \"mcpServers\" object: this file defines no MCP servers",
        )),
        None => {}
    }
    out
}

fn read_servers(node: &Node, ctx: &ForeignContext, path: &str, out: &mut ForeignConfig) {
    let Some(entries) = node.as_map() else {
        out.diagnostics.push(ctx.diag(
            Severity::Error,
            node.pos,
            path,
            format!("expected an object of servers, found {}", node.value.kind()),
        ));
        return;
    };
    for e in entries {
        let entry_path = format!("{path}.{}", e.key);
        if let Some(config) = convert_entry(ctx, &e.value, &entry_path, &mut out.diagnostics) {
            out.push_server(ctx, &e.key, e.key_pos, &entry_path, config);
        }
    }
}

/// Converts one server entry of `mcpServers` or VS Code's `servers`.
/// Problems are reported into `diags`; `None` means the entry is unusable.
pub(crate) fn convert_entry(
    ctx: &ForeignContext,
    node: &Node,
    path: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<McpServerConfig> {
    let entry: Entry = read_entry(ctx, node, path, (KNOWN, QUIET), diags)?;
    let pos_of = |key: &str| node.get(key).map_or(node.pos, |n| n.pos);
    let conv = |s: &str, key: &str, diags: &mut Vec<Diagnostic>| {
        convert_vars(s, ctx, pos_of(key), &format!("{path}.{key}"), diags)
    };
    let mut config = McpServerConfig {
        enabled: true,
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
        match v {
            Some(v) => {
                let v = conv(v.as_str(), "env", diags);
                config.env.insert(k.clone(), v);
            }
            None => diags.push(ctx.diag(
                Severity::Note,
                pos_of("env"),
                format!("{path}.env.{k}"),
                "null value: the variable is not set for this server",
            )),
        }
    }
    config.cwd = entry.cwd.as_ref().map(|c| conv(c.as_str(), "cwd", diags));
    config.url = entry.url.as_ref().map(|u| conv(u.as_str(), "url", diags));
    for (k, v) in &entry.headers {
        let v = conv(v.as_str(), "headers", diags);
        config.headers.insert(k.clone(), v);
    }
    if entry.disabled == Some(true) || entry.enabled == Some(false) {
        config.enabled = false;
    }
    if entry.env_file.is_some() {
        diags.push(ctx.diag(
            Severity::Warning,
            pos_of("envFile"),
            path,
            "\"envFile\" is not supported: export those variables or list them under `env`",
        ));
    }
    match entry.kind.as_ref().map(StrictString::as_str) {
        None | Some("stdio" | "http" | "streamable-http" | "streamableHttp" | "local" | "remote") => {}
        Some("sse") => diags.push(ctx.diag(
            Severity::Warning,
            pos_of("type"),
            path,
            "the SSE transport is deprecated; extpool connects with streamable HTTP, which most SSE servers also serve",
        )),
        Some(other) => diags.push(ctx.diag(
            Severity::Warning,
            pos_of("type"),
            path,
            format!("unknown type {other:?}; the transport is chosen from `command` or `url`"),
        )),
    }
    ctx.with_transport(config, node, path, diags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locate::Origin;
    use crate::tree::parse_json;

    fn ctx(origin: Origin) -> ForeignContext {
        ForeignContext {
            file: ".mcp.json".into(),
            origin,
            workspace: "/ws".into(),
            cwd: "/ws".into(),
            strict: false,
        }
    }

    #[test]
    fn reads_stdio_and_http_servers() {
        let text = r#"{"mcpServers": {
            "sequential-thinking": {"command": "npx", "args": ["-y", "x"], "env": {"A": "${A:-1}", "N": null}},
            "gh": {"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer ${env:GH}"}, "autoApprove": []},
            "broken": {"args": []},
            "off": {"command": "x", "disabled": true, "weird": 1}
        }}"#;
        let root = parse_json(text).unwrap();
        let out = read(&root, &ctx(Origin::ClaudeCode), false);
        let names: Vec<_> = out.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["sequential_thinking", "gh", "off"]);
        assert_eq!(out.servers[0].config.env["A"], "${A:-1}");
        assert!(!out.servers[0].config.env.contains_key("N"));
        assert_eq!(
            out.servers[1].config.headers["Authorization"],
            "Bearer ${GH}"
        );
        assert!(!out.servers[2].config.enabled);
        let msgs: Vec<String> = out.diagnostics.iter().map(|d| d.to_string()).collect();
        assert!(
            msgs.iter()
                .any(|m| m.contains("available as \"sequential_thinking\"")),
            "{msgs:#?}"
        );
        assert!(
            msgs.iter().any(|m| m.contains("error")
                && m.contains("mcpServers.broken")
                && m.contains("needs either")),
            "{msgs:#?}"
        );
        assert!(
            msgs.iter().any(|m| m.contains("\"weird\" is not used")),
            "{msgs:#?}"
        );
        assert!(!msgs.iter().any(|m| m.contains("autoApprove")), "{msgs:#?}");
    }

    #[test]
    fn claude_user_file_reads_project_entries_first() {
        let text = r#"{"numStartups": 3, "projects": {"/ws": {"mcpServers": {"local": {"command": "a"}}}},
                       "mcpServers": {"user": {"command": "b"}}}"#;
        let root = parse_json(text).unwrap();
        let out = read(&root, &ctx(Origin::ClaudeCode), true);
        let names: Vec<_> = out.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["local", "user"]);
    }

    #[test]
    fn type_errors_are_located() {
        let text = "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": \"-y\"}\n}}";
        let root = parse_json(text).unwrap();
        let out = read(&root, &ctx(Origin::ClaudeCode), false);
        assert!(out.servers.is_empty());
        let d = &out.diagnostics[0];
        assert_eq!(
            d.to_string(),
            ".mcp.json:2:33: error: mcpServers.a.args: expected a list, found a string; this server is skipped"
        );
    }

    #[test]
    fn a_number_or_boolean_where_a_string_belongs_is_a_located_error() {
        let text = "{\"mcpServers\": {\n  \"a\": {\"command\": 7},\n  \"b\": {\"url\": false},\n  \"c\": {\"command\": \"x\", \"env\": {\"K\": 1}},\n  \"ok\": {\"command\": \"x\", \"args\": [\"8080\"]}\n}}";
        let root = parse_json(text).unwrap();
        let out = read(&root, &ctx(Origin::ClaudeCode), false);
        let names: Vec<_> = out.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ok"]);
        let msgs: Vec<String> = out.diagnostics.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            msgs,
            [
                ".mcp.json:2:20: error: mcpServers.a.command: expected a string, found an integer; this server is skipped",
                ".mcp.json:3:16: error: mcpServers.b.url: expected a string, found a boolean; this server is skipped",
                ".mcp.json:4:38: error: mcpServers.c.env.K: expected a string, found an integer; this server is skipped",
            ]
        );
    }
}
