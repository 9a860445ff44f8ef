//! What Codex installed and enabled, as codex-rs reads it
//! (`core-plugins/src/loader.rs`, `store.rs`, `config/src/types.rs`):
//!
//! - configured plugins are the `[plugins."<plugin>@<marketplace>"]`
//!   tables of the user's `$CODEX_HOME/config.toml`, each with `enabled`
//!   (default `true`);
//! - a plugin's files are its plugin cache entry
//!   `$CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>/`, the
//!   active version being `local` when present, else the greatest name;
//! - a configured plugin without a cache entry is not installed.

use std::fs;
use std::path::PathBuf;

use extpool_config::tree::{Value, parse_toml};

use super::{Host, HostDirs, InstalledPlugin};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx;
use crate::plugin::{Format, ReadOptions};

/// A plugin id segment Codex accepts as a folder name: not empty, not `.`
/// or `..`, no separator.
fn segment_ok(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0'])
}

/// The active version folder of a plugin's cache entry.
pub fn active_version(base: &std::path::Path) -> Option<PathBuf> {
    let mut versions: Vec<String> = fs::read_dir(base)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|v| {
            segment_ok(v)
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
        })
        .collect();
    versions.sort_unstable();
    let version = if versions.iter().any(|v| v == "local") {
        "local".to_owned()
    } else {
        versions.pop()?
    };
    Some(base.join(version))
}

/// Every plugin configured in Codex's `config.toml`, enabled or not.
pub fn installed(dirs: &HostDirs, opts: &ReadOptions) -> (Vec<InstalledPlugin>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let config = dirs.codex.join("config.toml");
    if !config.exists() {
        return (Vec::new(), diags);
    }
    let text = match fsx::read_text(&config, opts.limits.max_file_bytes) {
        Ok(t) => t,
        Err(e) => {
            return (
                Vec::new(),
                vec![e.diagnostic(DiagnosticKind::HostRecord, &config)],
            );
        }
    };
    let root = match parse_toml(&text) {
        Ok(r) => r,
        Err(e) => {
            return (
                Vec::new(),
                vec![
                    Diagnostic::error(
                        DiagnosticKind::HostRecord,
                        &config,
                        format!("invalid TOML: {}; no Codex plugin is read", e.message),
                    )
                    .at(e.pos.line),
                ],
            );
        }
    };
    let Some(plugins) = root.get("plugins").and_then(|p| p.as_map()) else {
        return (Vec::new(), diags);
    };
    let mut out = Vec::new();
    for p in plugins.iter().take(opts.limits.max_plugins_per_root) {
        let Some((plugin, market)) = p
            .key
            .rsplit_once('@')
            .filter(|(a, b)| segment_ok(a) && segment_ok(b))
        else {
            diags.push(
                Diagnostic::warning(
                    DiagnosticKind::HostRecord,
                    &config,
                    format!(
                        "plugins.{:?} is not `<plugin>@<marketplace>`; ignored",
                        p.key
                    ),
                )
                .at(p.key_pos.line),
            );
            continue;
        };
        let (enabled, enabled_by) = match p.value.get("enabled").map(|n| &n.value) {
            Some(Value::Bool(on, _)) => (
                *on,
                format!("plugins.{:?}.enabled = {on} in {}", p.key, config.display()),
            ),
            _ => (
                true,
                format!(
                    "plugins.{:?} in {} (enabled by default)",
                    p.key,
                    config.display()
                ),
            ),
        };
        let base = dirs.codex.join("plugins/cache").join(market).join(plugin);
        let Some(install_path) = active_version(&base) else {
            diags.push(
                Diagnostic::warning(
                    DiagnosticKind::HostRecord,
                    &config,
                    format!(
                        "plugin {} is configured but not installed (no {})",
                        p.key,
                        base.display()
                    ),
                )
                .at(p.key_pos.line),
            );
            continue;
        };
        let mut item = InstalledPlugin {
            host: Host::Codex,
            id: p.key.clone(),
            scope: "user".into(),
            install_path: install_path.clone(),
            enabled,
            enabled_by,
            plugin: None,
            diagnostics: Vec::new(),
        };
        match crate::read::read_plugin(&install_path, Some(Format::Codex), opts) {
            Ok(plugin) => item.plugin = Some(plugin),
            Err(r) => item.diagnostics = r.diagnostics,
        }
        out.push(item);
    }
    if plugins.len() > opts.limits.max_plugins_per_root {
        diags.push(Diagnostic::warning(
            DiagnosticKind::Bound,
            &config,
            format!(
                "more than {} configured plugins; the rest are not read",
                opts.limits.max_plugins_per_root
            ),
        ));
    }
    (out, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_wins_else_the_greatest_version() {
        let tmp = tempfile::tempdir().unwrap();
        for v in ["1.0.0", "2.0.0", "../x"] {
            let _ = fs::create_dir_all(tmp.path().join(v));
        }
        assert_eq!(
            active_version(tmp.path()).unwrap(),
            tmp.path().join("2.0.0")
        );
        fs::create_dir_all(tmp.path().join("local")).unwrap();
        assert_eq!(
            active_version(tmp.path()).unwrap(),
            tmp.path().join("local")
        );
    }
}
