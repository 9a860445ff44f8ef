//! A plugin's MCP servers in its host's own format, converted by
//! extpool-config's readers of those formats (the one owner of how a
//! Claude Code `mcpServers` entry or a Codex `mcp_servers` entry becomes
//! an extpool server): the plugin's own variables (`${CLAUDE_PLUGIN_ROOT}`,
//! Gemini CLI's `${extensionPath}`…) are substituted first, escaped, so
//! they are never expanded again; the host's `${VAR}` references stay for
//! extpool to expand when the server starts, as the host does.

use std::path::Path;

use extpool_config::foreign::{ForeignConfig, ForeignContext, codex, mcp_servers_json};
use extpool_config::locate::Origin;
use extpool_config::tree::{Entry, Node, Value};

use crate::diag::{self, Diagnostic, DiagnosticKind};
use crate::plugin::{PluginServer, Transport, server_name};

/// Replaces each exact `${NAME}` of `vars` in every string of `node` with
/// its value, escaped for extpool's expansion.
pub(crate) fn substitute(node: &mut Node, vars: &[(&str, String)]) {
    match &mut node.value {
        Value::Str(s) if s.contains("${") => {
            let mut out = String::with_capacity(s.len());
            let mut rest = s.as_str();
            'outer: while let Some(i) = rest.find("${") {
                out.push_str(&rest[..i]);
                let at = &rest[i + 2..];
                for (name, value) in vars {
                    if let Some(after) = at.strip_prefix(name).and_then(|a| a.strip_prefix('}')) {
                        out.push_str(&extpool_config::expand::escape(value));
                        rest = after;
                        continue 'outer;
                    }
                }
                out.push_str("${");
                rest = at;
            }
            out.push_str(rest);
            *s = out;
        }
        Value::Seq(items) => items.iter_mut().for_each(|i| substitute(i, vars)),
        Value::Map(entries) => entries
            .iter_mut()
            .for_each(|e| substitute(&mut e.value, vars)),
        _ => {}
    }
}

/// `node` wrapped as the only value of key `key`.
fn wrap(key: &str, node: Node) -> Node {
    Node::new(
        node.pos,
        Value::Map(vec![Entry {
            key: key.to_owned(),
            key_pos: node.pos,
            value: node,
        }]),
    )
}

fn context(file: &Path, origin: Origin, workspace: &Path) -> ForeignContext {
    ForeignContext {
        file: file.display().to_string(),
        origin,
        workspace: workspace.to_owned(),
        cwd: workspace.to_owned(),
        strict: false,
    }
}

fn collect(
    plugin: &str,
    file: &Path,
    read: ForeignConfig,
    diags: &mut Vec<Diagnostic>,
) -> Vec<PluginServer> {
    diags.extend(
        read.diagnostics
            .iter()
            .map(|d| diag::from_config(d, file, DiagnosticKind::ServerSkipped)),
    );
    read.servers
        .into_iter()
        .map(|s| PluginServer {
            server_name: server_name(plugin, &s.original_name),
            transport: if s.config.url.is_some() {
                Transport::StreamableHttp
            } else {
                Transport::Stdio
            },
            name: s.original_name,
            config: s.config,
        })
        .collect()
}

/// The servers of an `mcpServers` object (Claude Code's `.mcp.json`, a
/// manifest's inline `mcpServers`, Gemini CLI's `mcpServers`): `node` is
/// either the document holding `mcpServers` or the server map itself.
pub(crate) fn mcp_servers(
    plugin: &str,
    file: &Path,
    node: &Node,
    vars: &[(&str, String)],
    origin: Origin,
    workspace: &Path,
    diags: &mut Vec<Diagnostic>,
) -> Vec<PluginServer> {
    let mut servers = node.get("mcpServers").unwrap_or(node).clone();
    substitute(&mut servers, vars);
    let doc = wrap("mcpServers", servers);
    let read = mcp_servers_json::read(&doc, &context(file, origin, workspace), false);
    collect(plugin, file, read, diags)
}

/// The servers of a Codex plugin's `.mcp.json` (`mcpServers` of Codex's
/// own entries): `type` is dropped and a relative `cwd` is taken from the
/// plugin root, as Codex does; nothing is expanded (Codex expands nothing).
pub(crate) fn codex_servers(
    plugin: &str,
    file: &Path,
    node: &Node,
    root: &Path,
    diags: &mut Vec<Diagnostic>,
) -> Vec<PluginServer> {
    let mut servers = node.get("mcpServers").unwrap_or(node).clone();
    if let Value::Map(entries) = &mut servers.value {
        for e in entries.iter_mut() {
            if let Value::Map(fields) = &mut e.value.value {
                fields.retain(|f| f.key != "type");
                for f in fields.iter_mut() {
                    if f.key == "cwd"
                        && let Value::Str(cwd) = &mut f.value.value
                        && !Path::new(cwd.as_str()).is_absolute()
                    {
                        *cwd = root.join(&*cwd).display().to_string();
                    }
                }
            }
        }
    }
    let doc = wrap("mcp_servers", servers);
    let read = codex::read(&doc, &context(file, Origin::Codex, root));
    collect(plugin, file, read, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_variables_are_substituted_once_and_escaped() {
        let mut n = crate::json::parse(r#"{"a": ["${ROOT}/x", "${HOME}", "${ROOTX}"]}"#).unwrap();
        substitute(&mut n, &[("ROOT", "/p/${HOME}".into())]);
        let v = crate::json::to_json(&n);
        assert_eq!(v["a"][0], "/p/$${HOME}/x");
        assert_eq!(v["a"][1], "${HOME}");
        assert_eq!(v["a"][2], "${ROOTX}");
    }
}
