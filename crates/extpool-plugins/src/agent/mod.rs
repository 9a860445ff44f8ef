//! Agent Plugins 1.0 (agent-plugins.org): root `plugin.json`, `skills/`,
//! `mcp.json`, read as the specification says, with its failure
//! boundaries:
//!
//! - `plugin.json` is the plugin: missing, not a regular file, resolving
//!   outside the root, not JSON, or breaking its closed schema rejects the
//!   plugin, and nothing of it is discovered (§5.2, §5.3, §4.1 rule 1) —
//!   except an unknown top-level field and a non-object `extensions`,
//!   which are reported and ignored (§5.2, §8.1);
//! - `skills/` and `mcp.json` are fixed locations: absent is not an error,
//!   present but of the wrong kind or outside the root makes that
//!   component invalid (§6.2); a skill that breaks the Agent Skills
//!   specification is skipped on its own (§7.1, strict SKILL.md rules);
//! - `mcp.json` as in [`mcp`].
//!
//! Its verdicts are tested against the specification's conformance corpus.

pub mod mcp;

use std::path::Path;

use extpool_config::tree::{Node, Value};
use extpool_skills::ValidationMode;

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{Found, Root};
use crate::json;
use crate::plugin::{Format, McpOutcome, Plugin, ReadOptions, Rejection};

/// The canonical `$schema` of an Agent Plugins 1.0.0 `plugin.json`.
pub const PLUGIN_SCHEMA_1_0_0: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";

/// The fields of `plugin.json` (§5.2); any other is reported and ignored.
const FIELDS: [&str; 10] = [
    "$schema",
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "extensions",
];

/// Why a plugin name breaks §5.5, or `None` when it is valid: 1–64
/// characters of `a-z`, `0-9`, `-`, `.`, alphanumeric at both ends, no
/// `--` or `..`.
pub fn plugin_name_problem(name: &str) -> Option<String> {
    let len = name.chars().count();
    if len == 0 {
        return Some("the name is empty".into());
    }
    if len > 64 {
        return Some(format!(
            "the name is {len} characters long; the limit is 64"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-' | '.'))
    {
        return Some(format!("character {c:?} is outside `a-z`, `0-9`, `-`, `.`"));
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge(name.chars().next()) || !edge(name.chars().next_back()) {
        return Some("the name must start and end with a letter or digit".into());
    }
    if name.contains("--") || name.contains("..") {
        return Some("the name must not repeat `-` or `.`".into());
    }
    None
}

/// What `plugin.json` gives when it is valid.
struct Manifest {
    name: String,
    version: Option<String>,
    description: Option<String>,
}

/// A fatal manifest problem: reason code, located message.
type Fatal = (&'static str, Diagnostic);

fn fatal(file: &Path, reason: &'static str, line: usize, message: impl Into<String>) -> Fatal {
    (
        reason,
        Diagnostic::error(
            DiagnosticKind::PluginRejected,
            file,
            format!("plugin rejected: {}", message.into()),
        )
        .at(line),
    )
}

fn manifest(file: &Path, root: &Node, diags: &mut Vec<Diagnostic>) -> Result<Manifest, Fatal> {
    let Some(fields) = root.as_map() else {
        return Err(fatal(
            file,
            "invalid-manifest",
            root.pos.line,
            "plugin.json must contain a top-level JSON object",
        ));
    };
    match root.get("$schema") {
        Some(n) if n.as_str() == Some(PLUGIN_SCHEMA_1_0_0) => {}
        Some(Node {
            value: Value::Str(other),
            pos,
        }) => {
            return Err(fatal(
                file,
                "unsupported-schema",
                pos.line,
                format!(
                    "`$schema` declares an Agent Plugins version extpool does not support: {other}"
                ),
            ));
        }
        Some(n) => {
            return Err(fatal(
                file,
                "invalid-manifest",
                n.pos.line,
                "required field `$schema` must be a string",
            ));
        }
        None => {
            return Err(fatal(
                file,
                "invalid-manifest",
                root.pos.line,
                "required field `$schema` is missing",
            ));
        }
    }
    let name = match root.get("name") {
        Some(n) => {
            let name = n.as_str().ok_or_else(|| {
                fatal(
                    file,
                    "invalid-manifest",
                    n.pos.line,
                    "field `name` must be a string",
                )
            })?;
            if let Some(problem) = plugin_name_problem(name) {
                return Err(fatal(
                    file,
                    "invalid-manifest",
                    n.pos.line,
                    format!("invalid plugin name {name:?}: {problem}"),
                ));
            }
            name.to_owned()
        }
        None => {
            return Err(fatal(
                file,
                "invalid-manifest",
                root.pos.line,
                "required field `name` is missing",
            ));
        }
    };
    let string = |key: &str| -> Result<Option<String>, Fatal> {
        match root.get(key) {
            None => Ok(None),
            Some(n) => n.as_str().map(|s| Some(s.to_owned())).ok_or_else(|| {
                fatal(
                    file,
                    "invalid-manifest",
                    n.pos.line,
                    format!("field `{key}` must be a string"),
                )
            }),
        }
    };
    let version = string("version")?;
    let description = string("description")?;
    string("homepage")?;
    string("repository")?;
    string("license")?;
    if let Some(author) = root.get("author") {
        let Some(entries) = author.as_map() else {
            return Err(fatal(
                file,
                "invalid-manifest",
                author.pos.line,
                "field `author` must be an object",
            ));
        };
        for e in entries {
            if !matches!(e.key.as_str(), "name" | "email" | "url") {
                return Err(fatal(
                    file,
                    "invalid-manifest",
                    e.key_pos.line,
                    format!(
                        "field `author.{}` is not allowed (only name, email, url)",
                        e.key
                    ),
                ));
            }
            if e.value.as_str().is_none() {
                return Err(fatal(
                    file,
                    "invalid-manifest",
                    e.value.pos.line,
                    format!("field `author.{}` must be a string", e.key),
                ));
            }
        }
    }
    if let Some(keywords) = root.get("keywords") {
        let ok = matches!(&keywords.value, Value::Seq(items) if items.iter().all(|i| i.as_str().is_some()));
        if !ok {
            return Err(fatal(
                file,
                "invalid-manifest",
                keywords.pos.line,
                "field `keywords` must be an array of strings",
            ));
        }
    }
    if let Some(ext) = root.get("extensions") {
        match ext.as_map() {
            Some(namespaces) => {
                if let Some(ns) = namespaces.iter().find(|ns| ns.value.as_map().is_none()) {
                    return Err(fatal(
                        file,
                        "invalid-manifest",
                        ns.value.pos.line,
                        format!("field `extensions.{}` must be an object", ns.key),
                    ));
                }
            }
            None => diags.push(
                Diagnostic::warning(
                    DiagnosticKind::ExtensionsIgnored,
                    file,
                    "`extensions` is not an object; ignored (§8.1)",
                )
                .at(ext.pos.line),
            ),
        }
    }
    for f in fields {
        if !FIELDS.contains(&f.key.as_str()) {
            diags.push(
                Diagnostic::warning(
                    DiagnosticKind::UnknownManifestField,
                    file,
                    format!("unknown top-level field `{}` ignored (§5.2)", f.key),
                )
                .at(f.key_pos.line),
            );
        }
    }
    Ok(Manifest {
        name,
        version,
        description,
    })
}

fn reject(reason: &'static str, d: Diagnostic) -> Rejection {
    Rejection {
        format: Some(Format::AgentPlugins),
        reason,
        diagnostics: vec![d],
    }
}

/// Reads the Agent Plugins 1.0 plugin in `dir`.
pub(crate) fn read(dir: &Path, opts: &ReadOptions) -> Result<Plugin, Rejection> {
    let root = Root::open(dir).map_err(|e| {
        reject(
            "not-a-directory",
            Diagnostic::error(
                DiagnosticKind::PluginRejected,
                dir,
                format!("cannot read the plugin folder: {e}"),
            ),
        )
    })?;
    let file = root.canonical.join("plugin.json");
    let rejected = |reason, message: String| {
        reject(
            reason,
            Diagnostic::error(DiagnosticKind::PluginRejected, &file, message),
        )
    };
    match root.locate("plugin.json") {
        Ok(Found::File(_)) => {}
        Ok(Found::Missing) => {
            return Err(rejected(
                "manifest-missing",
                "plugin rejected: no plugin.json at the plugin root (§5.1)".into(),
            ));
        }
        Ok(_) => {
            return Err(rejected(
                "manifest-not-a-file",
                "plugin rejected: plugin.json is not a regular file".into(),
            ));
        }
        Err(e) => {
            return Err(rejected(
                "manifest-escapes",
                format!("plugin rejected: {e}"),
            ));
        }
    }
    let mut diags = Vec::new();
    let node = json::read(
        &file,
        opts.limits.max_file_bytes,
        DiagnosticKind::PluginRejected,
    )
    .map_err(|d| reject("invalid-manifest", d))?;
    let m = manifest(&file, &node, &mut diags).map_err(|(reason, d)| reject(reason, d))?;
    let data_dir = opts.data_dir(Format::AgentPlugins, &m.name);
    let mut budget = opts.limits.max_files_per_plugin;
    let skills = match root.locate("skills") {
        Ok(Found::Missing) => Vec::new(),
        Ok(Found::Dir(skills_dir)) => crate::skills::read_children(
            &root,
            &skills_dir,
            &m.name,
            ValidationMode::Strict,
            &mut budget,
            &mut diags,
        ),
        Ok(_) => {
            diags.push(Diagnostic::error(
                DiagnosticKind::ComponentInvalid,
                &root.canonical.join("skills"),
                "`skills` exists but is not a directory (§6.2); no skills are loaded",
            ));
            Vec::new()
        }
        Err(e) => {
            let mut d = e.diagnostic(
                DiagnosticKind::ComponentInvalid,
                &root.canonical.join("skills"),
            );
            d.kind = DiagnosticKind::ComponentInvalid;
            diags.push(d);
            Vec::new()
        }
    };
    let mcp_file = root.canonical.join("mcp.json");
    let (mcp, servers) = match root.locate("mcp.json") {
        Ok(Found::Missing) => (McpOutcome::Absent, Vec::new()),
        Ok(Found::File(_)) => match json::read(
            &mcp_file,
            opts.limits.max_file_bytes,
            DiagnosticKind::McpDisabled,
        ) {
            Ok(node) => mcp::read(&root, &mcp_file, &node, &m.name, &data_dir, &mut diags),
            Err(mut d) => {
                d.kind = DiagnosticKind::McpDisabled;
                d.message = format!("MCP disabled for this plugin: {}", d.message);
                diags.push(d);
                (McpOutcome::Disabled, Vec::new())
            }
        },
        Ok(_) => {
            diags.push(Diagnostic::error(
                DiagnosticKind::ComponentInvalid,
                &mcp_file,
                "`mcp.json` exists but is not a regular file (§6.2); MCP disabled for this plugin",
            ));
            (McpOutcome::Disabled, Vec::new())
        }
        Err(e) => {
            let mut d = e.diagnostic(DiagnosticKind::ComponentInvalid, &mcp_file);
            d.kind = DiagnosticKind::ComponentInvalid;
            diags.push(d);
            (McpOutcome::Disabled, Vec::new())
        }
    };
    Ok(Plugin {
        format: Format::AgentPlugins,
        name: m.name,
        version: m.version,
        description: m.description,
        root: root.canonical.clone(),
        manifest: Some(file),
        skills,
        mcp,
        servers,
        commands: Vec::new(),
        agents: Vec::new(),
        hooks: Vec::new(),
        context_files: Vec::new(),
        data_dir,
        diagnostics: diags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_5_5() {
        for ok in ["my-plugin", "acme.tools", "lint3r", "a"] {
            assert_eq!(plugin_name_problem(ok), None, "{ok}");
        }
        for bad in ["My-Plugin", "-start", "has--double", "too.many..dots", ""] {
            assert!(plugin_name_problem(bad).is_some(), "{bad}");
        }
        assert!(plugin_name_problem(&"a".repeat(64)).is_none());
        assert!(plugin_name_problem(&"a".repeat(65)).is_some());
    }
}
