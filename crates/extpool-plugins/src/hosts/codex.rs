//! Codex plugins, read as codex-rs's `core-plugins` crate reads them
//! (`manifest.rs`, `loader.rs`):
//!
//! - the manifest is `.codex-plugin/plugin.json`, else
//!   `.claude-plugin/plugin.json`; an empty `name` falls back to the
//!   folder's name; a manifest that does not parse loses the plugin;
//! - `skills` and `mcpServers` in the manifest are `./` paths inside the
//!   plugin (anything else is ignored with a warning, as Codex does);
//! - skills come from `skills/` and from the manifest's `skills` folder
//!   (both), each searched as Codex searches skill roots (a `SKILL.md` at
//!   any depth up to 6), named `plugin:skill`;
//! - MCP servers come from the manifest's `mcpServers` file when given,
//!   else `.mcp.json`: Codex's own server entries under `mcpServers`,
//!   `type` ignored, a relative `cwd` taken from the plugin root, nothing
//!   expanded.
//!
//! Codex plugins carry no commands.

use std::path::Path;

use extpool_config::tree::Node;
use extpool_skills::{DiscoveryConfig, discover};

use super::Build;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{Found, Root};
use crate::plugin::{Format, Plugin, PluginSkill, ReadOptions, Rejection, qualified};

/// The manifest locations Codex tries, in order.
pub const MANIFESTS: [&str; 2] = [".codex-plugin/plugin.json", ".claude-plugin/plugin.json"];

/// Reads the Codex plugin in `dir`.
pub(crate) fn read(dir: &Path, opts: &ReadOptions) -> Result<Plugin, Rejection> {
    let root = super::open_root(dir, Format::Codex)?;
    let mut manifest = None;
    for rel in MANIFESTS {
        match root.locate(rel) {
            Ok(Found::File(f)) => {
                manifest = Some(f);
                break;
            }
            Ok(_) => {}
            Err(e) => {
                return Err(super::rejected(
                    Format::Codex,
                    "manifest-escapes",
                    e.diagnostic(DiagnosticKind::PluginRejected, &root.canonical.join(rel)),
                ));
            }
        }
    }
    let Some(file) = manifest else {
        return Err(super::rejected(
            Format::Codex,
            "manifest-missing",
            Diagnostic::error(
                DiagnosticKind::PluginRejected,
                &root.canonical.join(MANIFESTS[0]),
                "plugin rejected: no .codex-plugin/plugin.json or .claude-plugin/plugin.json",
            ),
        ));
    };
    let node = crate::json::read(
        &file,
        opts.limits.max_file_bytes,
        DiagnosticKind::PluginRejected,
    )
    .map_err(|d| super::rejected(Format::Codex, "invalid-manifest", d))?;
    if node.as_map().is_none() {
        return Err(super::rejected(
            Format::Codex,
            "invalid-manifest",
            Diagnostic::error(
                DiagnosticKind::PluginRejected,
                &file,
                "plugin rejected: plugin.json must contain a JSON object",
            ),
        ));
    }
    let name = node
        .get("name")
        .and_then(Node::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .or_else(|| {
            root.canonical
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let mut b = Build::new(Format::Codex, &name, &root, opts);
    b.plugin.manifest = Some(file.clone());
    b.plugin.version = node
        .get("version")
        .and_then(Node::as_str)
        .map(|v| v.trim().to_owned());
    b.plugin.description = node
        .get("description")
        .and_then(Node::as_str)
        .map(str::to_owned);
    let mut skill_roots = b.locate_default("skills");
    if let Some(p) = manifest_path(&mut b, &node, "skills", &file)
        && !skill_roots.iter().any(|(_, f)| *f == p.1)
    {
        skill_roots.push(p);
    }
    for (_, found) in skill_roots {
        if let Found::Dir(dir) = found {
            let skills = skills_in(&root, &dir, &name, &mut b.diags);
            b.add_skills(skills);
        }
    }
    let mcp = match manifest_path(&mut b, &node, "mcpServers", &file) {
        Some(p) => vec![p],
        None => b.locate_default(".mcp.json"),
    };
    for (_, found) in mcp {
        if let Some((mcp_file, doc)) = b.json_file(found, DiagnosticKind::McpDisabled) {
            let servers = crate::foreign::codex_servers(
                &name,
                &mcp_file,
                &doc,
                &root.canonical,
                &mut b.diags,
            );
            b.add_servers(servers, &mcp_file);
        }
    }
    Ok(b.finish())
}

/// A manifest field holding one `./` path (Codex ignores anything else).
fn manifest_path(
    b: &mut Build<'_>,
    node: &Node,
    key: &str,
    file: &Path,
) -> Option<(String, Found)> {
    let value = node.get(key)?;
    let line = value.pos.line;
    match value.as_str() {
        Some(p) if p.starts_with("./") && p.len() > 2 => b.locate_configured(p, file, line),
        _ => {
            b.diags.push(
                Diagnostic::warning(
                    DiagnosticKind::ComponentInvalid,
                    file,
                    format!("field `{key}` must be a `./` path inside the plugin; ignored"),
                )
                .at(line),
            );
            None
        }
    }
}

/// The skills below a skill root of a Codex plugin, found as Codex finds
/// them (any depth up to 6, extpool-skills' walk), kept only when they
/// resolve inside the plugin.
fn skills_in(
    root: &Root,
    dir: &Path,
    plugin: &str,
    diags: &mut Vec<Diagnostic>,
) -> Vec<PluginSkill> {
    let found = discover(&DiscoveryConfig::with_paths([dir]));
    for d in found.diagnostics.iter().filter(|d| d.is_error()) {
        diags.push(
            Diagnostic::error(
                DiagnosticKind::SkillSkipped,
                &d.path,
                format!("skill skipped: {}", d.message),
            )
            .with_line(d.line),
        );
    }
    let mut out = Vec::new();
    for s in found.skills {
        if !s.canonical_dir.starts_with(&root.canonical) {
            diags.push(Diagnostic::error(
                DiagnosticKind::PathEscape,
                &s.dir,
                format!(
                    "skill {} resolves to {} outside the plugin root; refused",
                    s.name(),
                    s.canonical_dir.display()
                ),
            ));
            continue;
        }
        out.push(PluginSkill {
            name: s.name().to_owned(),
            qualified: qualified(plugin, s.name()),
            plugin: plugin.to_owned(),
            plugin_root: root.canonical.clone(),
            dir: s.dir.clone(),
            skill_md: s.skill_md.clone(),
            meta: s.meta.clone(),
        });
    }
    out
}
