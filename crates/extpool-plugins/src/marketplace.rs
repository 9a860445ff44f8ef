//! Marketplace files: a catalog of plugins and where to get each.
//!
//! - Claude Code: `.claude-plugin/marketplace.json` — `{"name", "owner",
//!   "metadata"?: {"pluginRoot"?}, "plugins": [{"name", "source",
//!   "description"?, "version"?}]}`; `source` is a `./` path relative to
//!   the marketplace root (under `metadata.pluginRoot` when given), or an
//!   object `{"source": "github", "repo"}`, `{"source": "url", "url"}`,
//!   `{"source": "git-subdir", "url", "path"}` with `ref`/`sha`;
//! - Codex: `.agents/plugins/marketplace.json` (then Claude Code's file),
//!   the same shape, `source` also `{"source": "local", "path"}`.
//!
//! A local source must stay inside the marketplace (symlinks resolved);
//! an entry with an unknown source kind or a bad path is skipped with a
//! located diagnostic.

use std::path::{Path, PathBuf};

use extpool_config::tree::{Node, Value};
use serde::Serialize;

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{Found, Root, relative};
use crate::json;
use crate::limits::Limits;

/// Where the marketplace files are looked for below a marketplace root, in order.
pub const MARKETPLACE_FILES: [&str; 2] = [
    ".claude-plugin/marketplace.json",
    ".agents/plugins/marketplace.json",
];

/// Where a marketplace entry's plugin comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
#[non_exhaustive]
pub enum PluginSource {
    /// A folder of the marketplace (resolved, inside it).
    Path {
        /// The folder.
        path: PathBuf,
    },
    /// A git repository (`url`, or a GitHub `owner/repo`), a subfolder of
    /// it, a ref or a commit.
    Git {
        /// The clone URL.
        url: String,
        /// The plugin's folder inside the repository.
        subdir: Option<String>,
        /// A branch or tag.
        reference: Option<String>,
        /// A commit.
        sha: Option<String>,
    },
}

/// One plugin a marketplace lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarketplaceEntry {
    /// The plugin's name (`name@marketplace` installs it).
    pub name: String,
    /// Where it comes from.
    pub source: PluginSource,
    /// What it does.
    pub description: Option<String>,
    /// Its version, when the marketplace says.
    pub version: Option<String>,
}

/// A marketplace file, read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Marketplace {
    /// Its name.
    pub name: String,
    /// The file.
    pub file: PathBuf,
    /// Its plugins, in file order.
    pub plugins: Vec<MarketplaceEntry>,
}

/// The marketplace file of marketplace root `dir`, if any.
pub fn find(dir: &Path) -> Option<PathBuf> {
    MARKETPLACE_FILES
        .iter()
        .map(|f| dir.join(f))
        .find(|f| f.is_file())
}

fn source(root: &Root, base: &str, node: &Node, file: &Path) -> Result<PluginSource, Diagnostic> {
    let bad = |line: usize, m: String| {
        Diagnostic::error(
            DiagnosticKind::ComponentInvalid,
            file,
            format!("plugin skipped: {m}"),
        )
        .at(line)
    };
    let local = |raw: &str, line: usize| -> Result<PluginSource, Diagnostic> {
        let rel = relative(raw).map_err(|e| bad(line, e.to_string()))?;
        let joined = if base.is_empty() {
            rel.to_owned()
        } else {
            format!("{base}/{rel}")
        };
        match root.locate(&joined) {
            Ok(Found::Dir(path)) => Ok(PluginSource::Path { path }),
            Ok(_) => Err(bad(
                line,
                format!("{raw:?} is not a folder of the marketplace"),
            )),
            Err(e) => Err(bad(line, e.to_string())),
        }
    };
    let line = node.pos.line;
    match &node.value {
        Value::Str(raw) => local(raw, line),
        Value::Map(_) => {
            let kind = json::str_at(node, "source").unwrap_or_default();
            let git = |url: String, subdir: Option<String>| PluginSource::Git {
                url,
                subdir,
                reference: json::str_at(node, "ref").map(str::to_owned),
                sha: json::str_at(node, "sha").map(str::to_owned),
            };
            match kind {
                "local" | "directory" => {
                    let raw = json::str_at(node, "path")
                        .ok_or_else(|| bad(line, "no \"path\"".into()))?;
                    local(raw, line)
                }
                "github" => {
                    let repo = json::str_at(node, "repo")
                        .ok_or_else(|| bad(line, "no \"repo\"".into()))?;
                    Ok(git(format!("https://github.com/{repo}.git"), None))
                }
                "url" | "git" => {
                    let url =
                        json::str_at(node, "url").ok_or_else(|| bad(line, "no \"url\"".into()))?;
                    Ok(git(
                        url.to_owned(),
                        json::str_at(node, "path").map(str::to_owned),
                    ))
                }
                "git-subdir" => {
                    let url =
                        json::str_at(node, "url").ok_or_else(|| bad(line, "no \"url\"".into()))?;
                    let path = json::str_at(node, "path")
                        .ok_or_else(|| bad(line, "no \"path\"".into()))?;
                    Ok(git(url.to_owned(), Some(path.to_owned())))
                }
                other => Err(bad(line, format!("source kind {other:?} is not supported"))),
            }
        }
        _ => Err(bad(line, "\"source\" must be a path or an object".into())),
    }
}

/// Reads the marketplace whose root is `dir`: its entries, and every entry
/// skipped. `Err` when there is no marketplace file or it cannot be read.
pub fn read(dir: &Path, limits: &Limits) -> Result<(Marketplace, Vec<Diagnostic>), Diagnostic> {
    let Some(file) = find(dir) else {
        return Err(Diagnostic::error(
            DiagnosticKind::PluginRejected,
            dir,
            "no .claude-plugin/marketplace.json or .agents/plugins/marketplace.json",
        ));
    };
    let root = Root::open(dir).map_err(|e| {
        Diagnostic::error(
            DiagnosticKind::PluginRejected,
            dir,
            format!("cannot read: {e}"),
        )
    })?;
    let node = json::read(&file, limits.max_file_bytes, DiagnosticKind::PluginRejected)?;
    let name = json::str_at(&node, "name")
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| {
            Diagnostic::error(
                DiagnosticKind::PluginRejected,
                &file,
                "marketplace has no \"name\"",
            )
            .at(node.pos.line)
        })?
        .to_owned();
    let base = node
        .get("metadata")
        .and_then(|m| json::str_at(m, "pluginRoot"))
        .map(|b| b.trim_start_matches("./").trim_end_matches('/').to_owned())
        .unwrap_or_default();
    let mut diags = Vec::new();
    let mut plugins = Vec::new();
    let items = match node.get("plugins").map(|p| &p.value) {
        Some(Value::Seq(items)) => items.as_slice(),
        _ => {
            return Err(Diagnostic::error(
                DiagnosticKind::PluginRejected,
                &file,
                "marketplace has no \"plugins\" list",
            )
            .at(node.pos.line));
        }
    };
    for item in items.iter().take(limits.max_plugins_per_root) {
        let Some(pname) = json::str_at(item, "name") else {
            diags.push(
                Diagnostic::error(
                    DiagnosticKind::ComponentInvalid,
                    &file,
                    "plugin skipped: no \"name\"",
                )
                .at(item.pos.line),
            );
            continue;
        };
        let Some(src) = item.get("source") else {
            diags.push(
                Diagnostic::error(
                    DiagnosticKind::ComponentInvalid,
                    &file,
                    format!("plugin {pname} skipped: no \"source\""),
                )
                .at(item.pos.line),
            );
            continue;
        };
        match source(&root, &base, src, &file) {
            Ok(source) => plugins.push(MarketplaceEntry {
                name: pname.to_owned(),
                source,
                description: json::str_at(item, "description").map(str::to_owned),
                version: json::str_at(item, "version").map(str::to_owned),
            }),
            Err(mut d) => {
                d.message = format!("{pname}: {}", d.message);
                diags.push(d);
            }
        }
    }
    if items.len() > limits.max_plugins_per_root {
        diags.push(Diagnostic::warning(
            DiagnosticKind::Bound,
            &file,
            format!(
                "more than {} plugins; the rest are not read",
                limits.max_plugins_per_root
            ),
        ));
    }
    Ok((
        Marketplace {
            name,
            file,
            plugins,
        },
        diags,
    ))
}
