//! Claude Code plugins, read as Claude Code reads them (plugins
//! reference, code.claude.com/docs/en/plugins-reference):
//!
//! - the manifest `.claude-plugin/plugin.json` is optional (without one
//!   the folder's name is the plugin's); with one, `name` is required (no
//!   spaces, no `:` or `/`: it is the namespace of everything the plugin
//!   provides);
//! - default locations: `commands/` (`*.md`, subfolders are namespaces),
//!   `agents/` (`*.md`), `skills/` (`<name>/SKILL.md`), `hooks/hooks.json`,
//!   `.mcp.json`;
//! - `commands` and `agents` in the manifest (a `./` path or a list of
//!   them) replace the default folder; `skills` adds to `skills/`; `hooks`
//!   and `mcpServers` (paths or inline objects) are merged with the
//!   default files — what Claude Code 2.1.328 does (its `claude plugin
//!   validate` lists what a plugin provides, and `claude plugin list
//!   --json` notes "Default commands/ folder is ignored because the
//!   manifest sets \"commands\"", the same for `agents/`, and nothing for
//!   `skills/`);
//! - `${CLAUDE_PLUGIN_ROOT}` (and `${CLAUDE_PLUGIN_DATA}`) become the
//!   plugin's root (data folder) in MCP entries, hooks and commands;
//!   other `${VAR}`s of `.mcp.json` stay for the environment, as Claude
//!   Code expands them.

use std::path::Path;

use extpool_config::locate::Origin;
use extpool_config::tree::{Node, Value};
use extpool_skills::ValidationMode;

use super::Build;
use crate::command::{CommandOrigin, Dialect};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{Found, Root, relative};
use crate::plugin::{Format, Plugin, ReadOptions, Rejection};

/// Why a Claude Code plugin name is refused, or `None`.
pub(crate) fn name_problem(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("the name is empty")
    } else if name
        .chars()
        .any(|c| c.is_whitespace() || matches!(c, ':' | '/' | '\\'))
    {
        Some("the name must not contain spaces, `:`, `/` or `\\`")
    } else {
        None
    }
}

/// The `./` paths a manifest field lists (a string or a list of strings).
fn paths(node: &Node) -> Option<Vec<&str>> {
    match &node.value {
        Value::Str(s) => Some(vec![s.as_str()]),
        Value::Seq(items) => items.iter().map(Node::as_str).collect(),
        _ => None,
    }
}

/// Reads the Claude Code plugin in `dir`.
pub(crate) fn read(dir: &Path, opts: &ReadOptions) -> Result<Plugin, Rejection> {
    let root = super::open_root(dir, Format::ClaudeCode)?;
    let manifest_file = root.canonical.join(Format::ClaudeCode.manifest());
    let manifest = match root.locate(Format::ClaudeCode.manifest()) {
        Ok(Found::Missing) => None,
        Ok(Found::File(_)) => Some(
            crate::json::read(
                &manifest_file,
                opts.limits.max_file_bytes,
                DiagnosticKind::PluginRejected,
            )
            .map_err(|d| super::rejected(Format::ClaudeCode, "invalid-manifest", d))?,
        ),
        Ok(_) => {
            return Err(super::rejected(
                Format::ClaudeCode,
                "manifest-not-a-file",
                Diagnostic::error(
                    DiagnosticKind::PluginRejected,
                    &manifest_file,
                    "plugin rejected: not a regular file",
                ),
            ));
        }
        Err(e) => {
            return Err(super::rejected(
                Format::ClaudeCode,
                "manifest-escapes",
                e.diagnostic(DiagnosticKind::PluginRejected, &manifest_file),
            ));
        }
    };
    let fatal = |line: usize, message: String| {
        super::rejected(
            Format::ClaudeCode,
            "invalid-manifest",
            Diagnostic::error(
                DiagnosticKind::PluginRejected,
                &manifest_file,
                format!("plugin rejected: {message}"),
            )
            .at(line),
        )
    };
    let name = match &manifest {
        Some(m) if m.as_map().is_none() => {
            return Err(fatal(
                m.pos.line,
                "plugin.json must contain a JSON object".into(),
            ));
        }
        Some(m) => match m.get("name") {
            Some(n) => n
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| fatal(n.pos.line, "field `name` must be a string".into()))?,
            None => return Err(fatal(m.pos.line, "required field `name` is missing".into())),
        },
        None => root
            .canonical
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    if let Some(problem) = name_problem(&name) {
        return Err(fatal(1, format!("invalid plugin name {name:?}: {problem}")));
    }
    let mut b = Build::new(Format::ClaudeCode, &name, &root, opts);
    b.plugin.manifest = manifest.as_ref().map(|_| manifest_file.clone());
    if let Some(m) = &manifest {
        b.plugin.version = m.get("version").and_then(Node::as_str).map(str::to_owned);
        b.plugin.description = m
            .get("description")
            .and_then(Node::as_str)
            .map(str::to_owned);
    }
    let vars = vec![
        ("CLAUDE_PLUGIN_ROOT", root.canonical.display().to_string()),
        (
            "CLAUDE_PLUGIN_DATA",
            b.plugin.data_dir.display().to_string(),
        ),
    ];
    let field = |key: &str| manifest.as_ref().and_then(|m| m.get(key));
    // Locations a manifest field names instead of a default folder.
    let locations = |b: &mut Build<'_>, key: &str, default: &str| -> Vec<(String, Found)> {
        let Some(node) = field(key) else {
            return b.locate_default(default);
        };
        let Some(list) = paths(node) else {
            b.diags.push(
                Diagnostic::error(
                    DiagnosticKind::ComponentInvalid,
                    &manifest_file,
                    format!("field `{key}` must be a `./` path or a list of them; ignored"),
                )
                .at(node.pos.line),
            );
            return Vec::new();
        };
        list.into_iter()
            .filter_map(|p| b.locate_configured(p, &manifest_file, node.pos.line))
            .collect()
    };
    for (_, found) in locations(&mut b, "commands", "commands") {
        b.commands_at(found, Dialect::ClaudeCode, CommandOrigin::Plugin);
    }
    for (_, found) in locations(&mut b, "agents", "agents") {
        b.agents_at(found);
    }
    // Skills: `skills/`, then the manifest's folders besides it.
    let mut skill_dirs = b.locate_default("skills");
    if field("skills").is_some() {
        for (raw, found) in locations(&mut b, "skills", "skills") {
            if !skill_dirs.iter().any(|(_, f)| *f == found) {
                skill_dirs.push((raw, found));
            }
        }
    }
    for (_, found) in skill_dirs {
        b.skills_at(found, ValidationMode::Lenient);
    }
    // Hooks: the default file, then the manifest's (paths or inline).
    let mut hook_files = b.locate_default("hooks/hooks.json");
    if let Some(node) = field("hooks") {
        if node.as_map().is_some() {
            let mut inline = node.clone();
            crate::foreign::substitute(&mut inline, &vars);
            let hooks = crate::hooks::read(&inline, &manifest_file, &mut b.diags);
            b.plugin.hooks.extend(hooks);
        } else if let Some(list) = paths(node) {
            for p in list {
                if let Some(found) = b.locate_configured(p, &manifest_file, node.pos.line) {
                    hook_files.push(found);
                }
            }
        }
    }
    for (_, found) in hook_files {
        b.hooks_file(found, &vars);
    }
    // MCP servers: `.mcp.json`, then the manifest's (paths or inline).
    let mut mcp_files = b.locate_default(".mcp.json");
    if let Some(node) = field("mcpServers") {
        if node.as_map().is_some() {
            let servers = crate::foreign::mcp_servers(
                &name,
                &manifest_file,
                &Node::new(node.pos, node.value.clone()),
                &vars,
                Origin::ClaudeCode,
                &root.canonical,
                &mut b.diags,
            );
            b.add_servers(servers, &manifest_file);
        } else if let Some(list) = paths(node) {
            for p in list {
                if let Some(found) = b.locate_configured(p, &manifest_file, node.pos.line) {
                    mcp_files.push(found);
                }
            }
        }
    }
    for (_, found) in mcp_files {
        if let Some((file, node)) = b.json_file(found, DiagnosticKind::McpDisabled) {
            let servers = crate::foreign::mcp_servers(
                &name,
                &file,
                &node,
                &vars,
                Origin::ClaudeCode,
                &root.canonical,
                &mut b.diags,
            );
            b.add_servers(servers, &file);
        }
    }
    Ok(b.finish())
}

/// The `./` path `raw` of a manifest, checked; used by [`Build`].
pub(crate) fn configured(root: &Root, raw: &str) -> Result<Found, crate::fsx::PathError> {
    let rel = relative(raw)?;
    root.locate(rel)
}
