//! What Gemini CLI installed and enabled, as its extension manager reads
//! it (`extension-manager.ts`, `extensions/extensionEnablement.ts`):
//!
//! - each folder of `~/.gemini/extensions/` holding a
//!   `gemini-extension.json` is an extension; one whose
//!   `.gemini-extension-install.json` says `"type": "link"` is read from
//!   its `source` folder instead;
//! - `~/.gemini/extensions/extension-enablement.json` maps an extension's
//!   name to `{"overrides": [rule…]}`; an extension is enabled by default,
//!   and the last rule matching the working directory decides: a leading
//!   `!` disables, a trailing `*` covers subfolders too, a rule is matched
//!   against the directory with a leading and trailing `/`.

use std::fs;
use std::path::{Path, PathBuf};

use extpool_config::tree::{Node, Value};

use super::{Host, HostDirs, InstalledPlugin};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::json;
use crate::plugin::{Format, ReadOptions};

/// The longest enablement rule matched (longer ones are ignored).
const MAX_RULE_CHARS: usize = 4096;

fn with_slashes(path: &str) -> String {
    let mut s = path.replace('\\', "/");
    if !s.starts_with('/') {
        s.insert(0, '/');
    }
    if !s.ends_with('/') {
        s.push('/');
    }
    s
}

/// One piece of a rule: literal text, or a `*` (with the `/` before it).
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    /// `*`: matches nothing, or (after a `/` when `slash`) anything.
    Star {
        slash: bool,
    },
}

fn pieces(glob: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = glob;
    while let Some(i) = rest.find('*') {
        let (text, slash) = match rest[..i].strip_suffix('/') {
            Some(t) => (t, true),
            None => (&rest[..i], false),
        };
        if !text.is_empty() {
            out.push(Piece::Text(text));
        }
        out.push(Piece::Star { slash });
        rest = &rest[i + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// Gemini's glob: `(/?)*` becomes the optional group `(/?.*)?`, the rest literal.
fn glob_matches(pieces: &[Piece<'_>], s: &str) -> bool {
    match pieces.split_first() {
        None => s.is_empty(),
        Some((Piece::Text(t), rest)) => s.strip_prefix(t).is_some_and(|r| glob_matches(rest, r)),
        Some((Piece::Star { slash }, rest)) => {
            if glob_matches(rest, s) {
                return true;
            }
            let body = if *slash {
                match s.strip_prefix('/') {
                    Some(b) => b,
                    None => return false,
                }
            } else {
                s
            };
            (0..=body.len())
                .filter(|&i| body.is_char_boundary(i))
                .any(|i| glob_matches(rest, &body[i..]))
        }
    }
}

/// Whether extension overrides `rules` leave it enabled in `dir`, and the
/// deciding rule (`None`: the default).
pub fn is_enabled<'r>(rules: &'r [String], dir: &Path) -> (bool, Option<&'r str>) {
    let path = with_slashes(&dir.to_string_lossy());
    let mut state = (true, None);
    for rule in rules {
        if rule.len() > MAX_RULE_CHARS {
            continue;
        }
        let (disable, base) = match rule.strip_prefix('!') {
            Some(b) => (true, b),
            None => (false, rule.as_str()),
        };
        let (base, subdirs) = match base.strip_suffix('*') {
            Some(b) => (b, true),
            None => (base, false),
        };
        let glob = format!("{}{}", with_slashes(base), if subdirs { "*" } else { "" });
        if glob_matches(&pieces(&glob), &path) {
            state = (!disable, Some(rule.as_str()));
        }
    }
    state
}

/// The overrides of each extension in `extension-enablement.json`.
fn enablement(
    file: &Path,
    opts: &ReadOptions,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(String, Vec<String>)> {
    if !file.exists() {
        return Vec::new();
    }
    let node = match json::read(file, opts.limits.max_file_bytes, DiagnosticKind::HostRecord) {
        Ok(n) => n,
        Err(d) => {
            diags.push(d);
            return Vec::new();
        }
    };
    let Some(entries) = node.as_map() else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| {
            let Some(Value::Seq(rules)) = e.value.get("overrides").map(|o| &o.value) else {
                diags.push(
                    Diagnostic::warning(
                        DiagnosticKind::HostRecord,
                        file,
                        format!("{:?} has no \"overrides\" list; its default applies", e.key),
                    )
                    .at(e.value.pos.line),
                );
                return None;
            };
            Some((
                e.key.clone(),
                rules
                    .iter()
                    .filter_map(Node::as_str)
                    .map(str::to_owned)
                    .collect(),
            ))
        })
        .collect()
}

/// Every extension Gemini CLI installed, enabled or not for the project
/// (the home folder when there is none).
pub fn installed(dirs: &HostDirs, opts: &ReadOptions) -> (Vec<InstalledPlugin>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let root = dirs.gemini.join("extensions");
    let mut folders: Vec<PathBuf> = match fs::read_dir(&root) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(_) => return (Vec::new(), diags),
    };
    folders.sort();
    if folders.len() > opts.limits.max_plugins_per_root {
        diags.push(Diagnostic::warning(
            DiagnosticKind::Bound,
            &root,
            format!(
                "more than {} extensions; the rest are not read",
                opts.limits.max_plugins_per_root
            ),
        ));
        folders.truncate(opts.limits.max_plugins_per_root);
    }
    let enablement_file = root.join("extension-enablement.json");
    let rules = enablement(&enablement_file, opts, &mut diags);
    let cwd = dirs.project.clone().unwrap_or_else(|| dirs.home.clone());
    let mut opts = opts.clone();
    opts.project = Some(cwd.clone());
    let mut out: Vec<InstalledPlugin> = Vec::new();
    for folder in folders {
        let mut path = folder.clone();
        let meta = folder.join(".gemini-extension-install.json");
        if meta.is_file()
            && let Ok(node) = json::read(
                &meta,
                opts.limits.max_file_bytes,
                DiagnosticKind::HostRecord,
            )
            && json::str_at(&node, "type") == Some("link")
            && let Some(source) = json::str_at(&node, "source")
        {
            path = PathBuf::from(source);
        }
        if !path.join("gemini-extension.json").exists() {
            continue;
        }
        let mut item = InstalledPlugin {
            host: Host::GeminiCli,
            id: folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            scope: "user".into(),
            install_path: path.clone(),
            enabled: true,
            enabled_by: "enabled by default (no override matches)".into(),
            plugin: None,
            diagnostics: Vec::new(),
        };
        match crate::read::read_plugin(&path, Some(Format::GeminiCli), &opts) {
            Ok(plugin) => {
                if out
                    .iter()
                    .any(|o| o.plugin.as_ref().is_some_and(|p| p.name == plugin.name))
                {
                    diags.push(Diagnostic::warning(
                        DiagnosticKind::Shadowed,
                        &path,
                        format!(
                            "extension {} is already installed; this copy is not loaded",
                            plugin.name
                        ),
                    ));
                    continue;
                }
                item.id = plugin.name.clone();
                if let Some((_, list)) = rules.iter().find(|(k, _)| *k == plugin.name) {
                    let (on, rule) = is_enabled(list, &cwd);
                    item.enabled = on;
                    if let Some(rule) = rule {
                        item.enabled_by = format!(
                            "override {rule:?} of {} in {}",
                            plugin.name,
                            enablement_file.display()
                        );
                    }
                }
                item.plugin = Some(plugin);
            }
            Err(r) => item.diagnostics = r.diagnostics,
        }
        out.push(item);
    }
    (out, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_last_matching_rule_wins() {
        let home = Path::new("/home/u");
        let proj = Path::new("/home/u/proj");
        assert!(is_enabled(&r(&["/home/u/*"]), proj).0);
        assert!(!is_enabled(&r(&["!/home/u/*"]), proj).0);
        assert!(!is_enabled(&r(&["!/home/u/*"]), home).0);
        assert!(is_enabled(&r(&["!/home/u/*", "/home/u/proj"]), proj).0);
        // Without `*`, only that directory.
        assert!(is_enabled(&r(&["!/home/u"]), proj).0);
        assert!(!is_enabled(&r(&["!/home/u"]), home).0);
        assert_eq!(is_enabled(&r(&[]), proj), (true, None));
        // Not a prefix of a longer name.
        assert!(is_enabled(&r(&["!/home/u/pro*"]), proj).0);
    }
}
