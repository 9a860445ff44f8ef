//! Agent Plugins 1.0 `mcp.json` (§7.2): a closed union of `stdio`,
//! `streamable-http` and `sse` entries, each checked on its own.
//!
//! - A top-level problem (not JSON, not an object, a `$schema` other than
//!   1.0.0's, a field other than `$schema`/`mcpServers`, `mcpServers` not
//!   an object) disables MCP for the plugin (§7.2.2 rule 2).
//! - A bad entry skips that server (§7.2.2 rule 3): a missing or unknown
//!   `type`, a field of another variant or none, a `command` that is not
//!   one bare executable name or a `./` path inside the plugin, a `cwd`
//!   not of the three permitted forms or leaving its anchor, an `env`
//!   naming `PLUGIN_ROOT`/`PLUGIN_DATA`, a URL that is not absolute
//!   http(s), has user information or a fragment, or is plain `http` off
//!   loopback, an invalid or repeated header.
//! - `${PLUGIN_ROOT}` and `${PLUGIN_DATA}` are replaced once, without
//!   rescanning, in `args`, `env` values and `cwd` only (§9.2); nothing
//!   else is expanded anywhere (the result is escaped so extpool's own
//!   `${VAR}` expansion leaves it as written). `PLUGIN_ROOT` and
//!   `PLUGIN_DATA` are set last in the child's environment (§9.1).

use std::path::{Path, PathBuf};

use extpool_config::McpServerConfig;
use extpool_config::expand::escape;
use extpool_config::tree::{Node, Pos, Value};

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{Root, lexically_contained};
use crate::plugin::{McpOutcome, PluginServer, Transport, server_name};

/// The canonical `$schema` of an Agent Plugins 1.0.0 `mcp.json`.
pub const MCP_SCHEMA_1_0_0: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// The two anchors of §9: the resolved plugin root and its data folder.
struct Anchors<'a> {
    root: &'a Path,
    data: &'a Path,
}

impl Anchors<'_> {
    /// Replaces every exact `${PLUGIN_ROOT}` and `${PLUGIN_DATA}` once;
    /// replacement text is never rescanned, other `${…}` stays literal.
    fn expand(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find("${") {
            out.push_str(&rest[..i]);
            let at = &rest[i..];
            if let Some(after) = at.strip_prefix("${PLUGIN_ROOT}") {
                out.push_str(&self.root.to_string_lossy());
                rest = after;
            } else if let Some(after) = at.strip_prefix("${PLUGIN_DATA}") {
                out.push_str(&self.data.to_string_lossy());
                rest = after;
            } else {
                out.push_str("${");
                rest = &at[2..];
            }
        }
        out.push_str(rest);
        out
    }
}

/// Why one server entry was skipped, located.
struct Invalid {
    pos: Pos,
    message: String,
}

fn invalid(pos: Pos, message: impl Into<String>) -> Invalid {
    Invalid {
        pos,
        message: message.into(),
    }
}

/// Reads a parsed `mcp.json` (`file`) of plugin `plugin`.
pub(crate) fn read(
    root: &Root,
    file: &Path,
    node: &Node,
    plugin: &str,
    data_dir: &Path,
    diags: &mut Vec<Diagnostic>,
) -> (McpOutcome, Vec<PluginServer>) {
    let disable = |pos: Pos, message: String| {
        Diagnostic::error(
            DiagnosticKind::McpDisabled,
            file,
            format!("MCP disabled for this plugin: {message}"),
        )
        .at(pos.line)
    };
    let Some(entries) = node.as_map() else {
        diags.push(disable(
            node.pos,
            "mcp.json must contain a top-level JSON object".into(),
        ));
        return (McpOutcome::Disabled, Vec::new());
    };
    match node.get("$schema") {
        Some(n) if n.as_str() == Some(MCP_SCHEMA_1_0_0) => {}
        Some(n) => {
            diags.push(disable(
                n.pos,
                format!(
                    "`$schema` must be {MCP_SCHEMA_1_0_0:?}, the version plugin.json declares (§10.1)"
                ),
            ));
            return (McpOutcome::Disabled, Vec::new());
        }
        None => {
            diags.push(disable(
                node.pos,
                "required field `$schema` is missing".into(),
            ));
            return (McpOutcome::Disabled, Vec::new());
        }
    }
    if let Some(extra) = entries
        .iter()
        .find(|e| e.key != "$schema" && e.key != "mcpServers")
    {
        diags.push(disable(
            extra.key_pos,
            format!(
                "unexpected top-level field `{}` (only `$schema` and `mcpServers`)",
                extra.key
            ),
        ));
        return (McpOutcome::Disabled, Vec::new());
    }
    let Some(servers) = node.get("mcpServers").and_then(Node::as_map) else {
        diags.push(disable(
            node.get("mcpServers").map_or(node.pos, |n| n.pos),
            "required field `mcpServers` is missing or not an object".into(),
        ));
        return (McpOutcome::Disabled, Vec::new());
    };
    let anchors = Anchors {
        root: &root.canonical,
        data: data_dir,
    };
    let mut out = Vec::new();
    for entry in servers {
        match server(root, &anchors, &entry.value) {
            Ok((transport, config)) => out.push(PluginServer {
                server_name: server_name(plugin, &entry.key),
                name: entry.key.clone(),
                transport,
                config,
            }),
            Err(e) => diags.push(
                Diagnostic::error(
                    DiagnosticKind::ServerSkipped,
                    file,
                    format!("server {:?} skipped: {}", entry.key, e.message),
                )
                .at(e.pos.line),
            ),
        }
    }
    (McpOutcome::Configured, out)
}

fn server(
    root: &Root,
    anchors: &Anchors<'_>,
    node: &Node,
) -> Result<(Transport, McpServerConfig), Invalid> {
    let Some(fields) = node.as_map() else {
        return Err(invalid(node.pos, "a server entry must be a JSON object"));
    };
    let kind = match node.get("type") {
        Some(Node {
            value: Value::Str(t),
            ..
        }) => t.as_str(),
        Some(n) => return Err(invalid(n.pos, "field `type` must be a string")),
        None => return Err(invalid(node.pos, "required field `type` is missing")),
    };
    let (transport, allowed): (Transport, &[&str]) = match kind {
        "stdio" => (Transport::Stdio, &["type", "command", "args", "env", "cwd"]),
        "streamable-http" => (Transport::StreamableHttp, &["type", "url", "headers"]),
        "sse" => (Transport::Sse, &["type", "url", "headers"]),
        other => {
            let pos = node.get("type").map_or(node.pos, |n| n.pos);
            return Err(invalid(
                pos,
                format!("unknown transport type {other:?} (stdio, streamable-http or sse)"),
            ));
        }
    };
    if let Some(f) = fields.iter().find(|f| !allowed.contains(&f.key.as_str())) {
        return Err(invalid(
            f.key_pos,
            format!("field `{}` does not belong to the {kind} variant", f.key),
        ));
    }
    let config = match transport {
        Transport::Stdio => stdio(root, anchors, node)?,
        Transport::StreamableHttp | Transport::Sse => remote(node)?,
    };
    Ok((transport, config))
}

fn strings<'a>(node: &'a Node, field: &str) -> Result<Vec<&'a str>, Invalid> {
    match &node.value {
        Value::Seq(items) => items
            .iter()
            .map(|i| {
                i.as_str().ok_or_else(|| {
                    invalid(
                        i.pos,
                        format!("field `{field}` must be an array of strings"),
                    )
                })
            })
            .collect(),
        _ => Err(invalid(
            node.pos,
            format!("field `{field}` must be an array of strings"),
        )),
    }
}

/// `root` joined with a lexically contained relative path, `..` applied.
fn join_lexically(root: &Path, rel: &str) -> PathBuf {
    let mut out = root.to_path_buf();
    for segment in rel.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    out
}

/// A `./` path of the plugin: lexically inside, and inside once resolved
/// when it exists.
fn plugin_path(root: &Root, raw: &str, pos: Pos, what: &str) -> Result<PathBuf, Invalid> {
    let rest = raw.strip_prefix("./").unwrap_or(raw);
    if !lexically_contained(rest) {
        return Err(invalid(
            pos,
            format!("`{what}` {raw:?} leaves the plugin root"),
        ));
    }
    let joined = join_lexically(&root.canonical, rest);
    if let Ok(resolved) = std::fs::canonicalize(&joined)
        && !resolved.starts_with(&root.canonical)
    {
        return Err(invalid(
            pos,
            format!(
                "`{what}` {raw:?} resolves to {} outside the plugin root",
                resolved.display()
            ),
        ));
    }
    Ok(joined)
}

fn stdio(root: &Root, anchors: &Anchors<'_>, node: &Node) -> Result<McpServerConfig, Invalid> {
    let mut config = McpServerConfig {
        enabled: true,
        ..McpServerConfig::default()
    };
    let command = match node.get("command") {
        Some(n) => n
            .as_str()
            .ok_or_else(|| invalid(n.pos, "field `command` must be a string"))
            .map(|c| (c, n.pos))?,
        None => return Err(invalid(node.pos, "required field `command` is missing")),
    };
    config.command = Some(if command.0.starts_with("./") {
        escape(&plugin_path(root, command.0, command.1, "command")?.to_string_lossy())
    } else if command.0.is_empty() || command.0.contains(['/', '\\']) {
        return Err(invalid(
            command.1,
            format!(
                "`command` {:?} must be one bare executable name or a `./` path in the plugin",
                command.0
            ),
        ));
    } else {
        escape(command.0)
    });
    if let Some(args) = node.get("args") {
        config.args = strings(args, "args")?
            .into_iter()
            .map(|a| escape(&anchors.expand(a)))
            .collect();
    }
    if let Some(env) = node.get("env") {
        let Some(vars) = env.as_map() else {
            return Err(invalid(env.pos, "field `env` must be an object of strings"));
        };
        for v in vars {
            if v.key == "PLUGIN_ROOT" || v.key == "PLUGIN_DATA" {
                return Err(invalid(
                    v.key_pos,
                    format!("`env` must not set the reserved variable {} (§9.2)", v.key),
                ));
            }
            let value = v
                .value
                .as_str()
                .ok_or_else(|| invalid(v.value.pos, "field `env` must be an object of strings"))?;
            config
                .env
                .insert(v.key.clone(), escape(&anchors.expand(value)));
        }
    }
    let cwd = match node.get("cwd") {
        None => root.canonical.clone(),
        Some(n) => {
            let raw = n
                .as_str()
                .ok_or_else(|| invalid(n.pos, "field `cwd` must be a string"))?;
            cwd(root, anchors, raw, n.pos)?
        }
    };
    config.cwd = Some(escape(&cwd.to_string_lossy()));
    config.env.insert(
        "PLUGIN_ROOT".into(),
        escape(&anchors.root.to_string_lossy()),
    );
    config.env.insert(
        "PLUGIN_DATA".into(),
        escape(&anchors.data.to_string_lossy()),
    );
    Ok(config)
}

/// §7.2.1: `./…`, `${PLUGIN_ROOT}[/…]` or `${PLUGIN_DATA}[/…]`, staying
/// inside its anchor.
fn cwd(root: &Root, anchors: &Anchors<'_>, raw: &str, pos: Pos) -> Result<PathBuf, Invalid> {
    let bad = || {
        invalid(
            pos,
            format!(
                "`cwd` {raw:?} must be `./…`, `${{PLUGIN_ROOT}}[/…]` or `${{PLUGIN_DATA}}[/…]` and stay inside it"
            ),
        )
    };
    if raw.starts_with("./") {
        return plugin_path(root, raw, pos, "cwd");
    }
    for (anchor, base, in_root) in [
        ("${PLUGIN_ROOT}", anchors.root, true),
        ("${PLUGIN_DATA}", anchors.data, false),
    ] {
        let Some(rest) = raw.strip_prefix(anchor) else {
            continue;
        };
        if rest.is_empty() {
            return Ok(base.to_path_buf());
        }
        let sub = rest.strip_prefix('/').ok_or_else(bad)?;
        if sub.contains("${") || !lexically_contained(sub) {
            return Err(bad());
        }
        return if in_root {
            plugin_path(root, &format!("./{sub}"), pos, "cwd")
        } else {
            Ok(join_lexically(base, sub))
        };
    }
    Err(bad())
}

/// §7.2.1's URL rule: absolute http(s), no user information, no fragment,
/// plain `http` only to `localhost` or a loopback address.
fn check_url(raw: &str) -> Result<(), String> {
    if raw.contains('#') {
        return Err("the URL must not contain a fragment".into());
    }
    extpool_core::check_http_url(raw).map_err(|e| e.to_string())?;
    let (scheme, rest) = raw.split_once("://").unwrap_or(("", raw));
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    if authority.contains('@') {
        return Err("the URL must not contain user information".into());
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().map(|h| format!("[{h}]"))
    } else {
        authority.split(':').next().map(str::to_owned)
    }
    .filter(|h| !h.is_empty() && h != "[]")
    .ok_or("the URL has no host")?;
    if let Some((_, port)) = authority.rsplit_once(':')
        && !authority.ends_with(']')
        && !port.chars().all(|c| c.is_ascii_digit())
    {
        return Err("the URL's port is not a number".into());
    }
    if !scheme.eq_ignore_ascii_case("https") && !extpool_core::is_loopback_host(&host) {
        return Err("plain http is only allowed to localhost or a loopback address".into());
    }
    Ok(())
}

fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn remote(node: &Node) -> Result<McpServerConfig, Invalid> {
    let url = match node.get("url") {
        Some(n) => n
            .as_str()
            .ok_or_else(|| invalid(n.pos, "field `url` must be a string"))
            .map(|u| (u, n.pos))?,
        None => return Err(invalid(node.pos, "required field `url` is missing")),
    };
    check_url(url.0).map_err(|m| invalid(url.1, format!("invalid endpoint URL: {m}")))?;
    let mut config = McpServerConfig {
        url: Some(escape(url.0)),
        enabled: true,
        ..McpServerConfig::default()
    };
    if let Some(headers) = node.get("headers") {
        let Some(entries) = headers.as_map() else {
            return Err(invalid(
                headers.pos,
                "field `headers` must be an object of strings",
            ));
        };
        for h in entries {
            if !is_token(&h.key) {
                return Err(invalid(
                    h.key_pos,
                    format!("invalid HTTP header name {:?}", h.key),
                ));
            }
            let value = h.value.as_str().ok_or_else(|| {
                invalid(h.value.pos, "field `headers` must be an object of strings")
            })?;
            if value.bytes().any(|b| b != b'\t' && (b < 0x20 || b == 0x7f)) {
                return Err(invalid(
                    h.value.pos,
                    format!("invalid value for HTTP header {:?}", h.key),
                ));
            }
            if config
                .headers
                .keys()
                .any(|seen| seen.eq_ignore_ascii_case(&h.key))
            {
                return Err(invalid(
                    h.key_pos,
                    format!(
                        "header {:?} appears more than once (names ignore case)",
                        h.key
                    ),
                ));
            }
            config.headers.insert(h.key.clone(), escape(value));
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_7_2_1() {
        for ok in [
            "https://deploy.example.com/mcp",
            "http://localhost:8080/mcp",
            "http://127.8.9.1/x",
            "http://[::1]:9000/sse",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://mcp.example.com/api",
            "https://a:b@example.com/",
            "https://example.com/api#frag",
            "ftp://example.com/",
            "https:///path",
            "https://example.com:x/",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn anchors_expand_once() {
        let a = Anchors {
            root: Path::new("/evil/${PLUGIN_DATA}"),
            data: Path::new("/data"),
        };
        assert_eq!(
            a.expand("${PLUGIN_ROOT}/bin ${HOME} $PLUGIN_DATA ${PLUGIN_DATA}"),
            "/evil/${PLUGIN_DATA}/bin ${HOME} $PLUGIN_DATA /data"
        );
    }
}
