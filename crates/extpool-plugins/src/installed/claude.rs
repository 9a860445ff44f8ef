//! What Claude Code installed and enabled (observed with Claude Code
//! 2.1.328's own `claude plugin install` in an empty HOME):
//!
//! - `<config>/plugins/installed_plugins.json`: `{"version": 2, "plugins":
//!   {"P@M": [{"scope": "user", "installPath": …, "version": …,
//!   "projectPath"?: …}]}}` — a list per plugin, one entry per scope (an
//!   older single object is read too); `user` entries apply everywhere,
//!   `project`/`local` ones only in their `projectPath`;
//! - `enabledPlugins: {"P@M": true|false}` in the user
//!   (`<config>/settings.json`), project (`.claude/settings.json`) and
//!   local (`.claude/settings.local.json`) settings, a later file
//!   overriding an earlier one as Claude Code's settings precedence does
//!   (local > project > user); a plugin no file enables is not enabled.

use std::path::{Path, PathBuf};

use extpool_config::tree::{Node, Value};

use super::{Host, HostDirs, InstalledPlugin};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::json;
use crate::plugin::{Format, ReadOptions};

/// The settings files that may carry `enabledPlugins`, lowest precedence first.
pub fn settings_files(dirs: &HostDirs) -> Vec<PathBuf> {
    let mut files = vec![dirs.claude.join("settings.json")];
    if let Some(project) = &dirs.project {
        files.push(project.join(".claude/settings.json"));
        files.push(project.join(".claude/settings.local.json"));
    }
    files
}

/// The final `enabledPlugins` value of each plugin id, and the file that set it.
fn enabled_plugins(
    dirs: &HostDirs,
    opts: &ReadOptions,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(String, bool, PathBuf)> {
    let mut out: Vec<(String, bool, PathBuf)> = Vec::new();
    for file in settings_files(dirs) {
        if !file.exists() {
            continue;
        }
        let node = match json::read(
            &file,
            opts.limits.max_file_bytes,
            DiagnosticKind::HostRecord,
        ) {
            Ok(n) => n,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        let Some(map) = node.get("enabledPlugins").and_then(Node::as_map) else {
            continue;
        };
        for e in map {
            let Value::Bool(on, _) = e.value.value else {
                diags.push(
                    Diagnostic::warning(
                        DiagnosticKind::HostRecord,
                        &file,
                        format!("enabledPlugins.{:?} is not true or false; ignored", e.key),
                    )
                    .at(e.value.pos.line),
                );
                continue;
            };
            out.retain(|(k, _, _)| *k != e.key);
            out.push((e.key.clone(), on, file.clone()));
        }
    }
    out
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Every plugin Claude Code installed for `dirs`, enabled or not.
pub fn installed(dirs: &HostDirs, opts: &ReadOptions) -> (Vec<InstalledPlugin>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let record = dirs.claude.join("plugins/installed_plugins.json");
    if !record.exists() {
        return (Vec::new(), diags);
    }
    let node = match json::read(
        &record,
        opts.limits.max_file_bytes,
        DiagnosticKind::HostRecord,
    ) {
        Ok(n) => n,
        Err(d) => return (Vec::new(), vec![d]),
    };
    let Some(plugins) = node.get("plugins").and_then(Node::as_map) else {
        diags.push(
            Diagnostic::error(
                DiagnosticKind::HostRecord,
                &record,
                "no \"plugins\" object: no Claude Code plugin is read",
            )
            .at(node.pos.line),
        );
        return (Vec::new(), diags);
    };
    let enabled = enabled_plugins(dirs, opts, &mut diags);
    let mut out = Vec::new();
    for p in plugins {
        let entries: Vec<&Node> = match &p.value.value {
            Value::Seq(items) => items.iter().collect(),
            Value::Map(_) => vec![&p.value],
            _ => Vec::new(),
        };
        for entry in entries {
            if out.len() >= opts.limits.max_plugins_per_root {
                diags.push(Diagnostic::warning(
                    DiagnosticKind::Bound,
                    &record,
                    format!(
                        "more than {} installed plugins; the rest are not read",
                        opts.limits.max_plugins_per_root
                    ),
                ));
                return (out, diags);
            }
            let scope = json::str_at(entry, "scope").unwrap_or("user").to_owned();
            if scope != "user"
                && let (Some(mine), Some(theirs)) =
                    (&dirs.project, json::str_at(entry, "projectPath"))
                && !same_dir(mine, Path::new(theirs))
            {
                continue;
            }
            if scope != "user" && dirs.project.is_none() {
                continue;
            }
            let Some(install_path) = json::str_at(entry, "installPath").map(PathBuf::from) else {
                diags.push(
                    Diagnostic::warning(
                        DiagnosticKind::HostRecord,
                        &record,
                        format!("plugin {:?} has no installPath; skipped", p.key),
                    )
                    .at(entry.pos.line),
                );
                continue;
            };
            let (on, by) = match enabled.iter().find(|(k, _, _)| *k == p.key) {
                Some((_, on, file)) => (
                    *on,
                    format!("enabledPlugins[{:?}] = {on} in {}", p.key, file.display()),
                ),
                None => (
                    false,
                    "not enabled in any Claude Code settings file".to_owned(),
                ),
            };
            let mut item = InstalledPlugin {
                host: Host::ClaudeCode,
                id: p.key.clone(),
                scope,
                install_path: install_path.clone(),
                enabled: on,
                enabled_by: by,
                plugin: None,
                diagnostics: Vec::new(),
            };
            match crate::read::read_plugin(&install_path, Some(Format::ClaudeCode), opts) {
                Ok(plugin) => item.plugin = Some(plugin),
                Err(r) => item.diagnostics = r.diagnostics,
            }
            out.push(item);
        }
    }
    (out, diags)
}
