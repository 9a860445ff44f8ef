//! Subagent definitions (`agents/*.md` of Claude Code plugins and Gemini
//! CLI extensions): frontmatter `name`, `description`, `tools` (the
//! allowlist: a comma-separated string or a list; absent means every
//! tool), `model`; the body is the system prompt. Read into
//! [`AgentSpec`]s for the agent library; nothing is run.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value as Json;

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{self, Walk, walk_files};
use crate::limits::Limits;
use crate::names::qualified;

/// A subagent a plugin defines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentSpec {
    /// Its name (`name`, else the file's).
    pub name: String,
    /// The name it is listed under: `plugin:agent`.
    pub qualified: String,
    /// When to use it.
    pub description: String,
    /// The tools it may use; `None` when the definition sets no allowlist.
    pub tools: Option<Vec<String>>,
    /// `model`: the model hint (`sonnet`, `inherit`, a model id).
    pub model: Option<String>,
    /// The system prompt (the body).
    pub system_prompt: String,
    /// The file it was read from.
    pub path: PathBuf,
}

fn tools_of(value: &Json) -> Option<Vec<String>> {
    match value {
        Json::String(s) => Some(
            s.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        Json::Array(items) => Some(
            items
                .iter()
                .filter_map(Json::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

/// Reads one agent definition of plugin `plugin`.
pub(crate) fn read_agent(
    path: &Path,
    stem: &str,
    plugin: &str,
    limits: &Limits,
) -> Result<AgentSpec, Diagnostic> {
    let skipped = |line: usize, m: String| {
        Diagnostic::error(
            DiagnosticKind::AgentSkipped,
            path,
            format!("agent skipped: {m}"),
        )
        .at(line)
    };
    let text = fsx::read_text(path, limits.max_file_bytes)
        .map_err(|e| e.diagnostic(DiagnosticKind::AgentSkipped, path))?;
    let fm = match extpool_skills::frontmatter_json(&text) {
        Ok(Json::Object(m)) => m,
        Ok(_) => return Err(skipped(1, "the frontmatter must be a YAML mapping".into())),
        Err(e) => return Err(skipped(e.line, e.message)),
    };
    let body = extpool_skills::skill::body_from_bytes(path, text.as_bytes())
        .map_err(|e| skipped(1, e.to_string()))?;
    let name = fm
        .get("name")
        .and_then(Json::as_str)
        .unwrap_or(stem)
        .to_owned();
    let description = fm
        .get("description")
        .and_then(Json::as_str)
        .map(str::to_owned)
        .ok_or_else(|| skipped(1, "the frontmatter has no `description`".into()))?;
    Ok(AgentSpec {
        qualified: qualified(plugin, &name),
        name,
        description,
        tools: fm.get("tools").and_then(tools_of),
        model: fm.get("model").and_then(Json::as_str).map(str::to_owned),
        system_prompt: body,
        path: path.to_owned(),
    })
}

/// Reads the `*.md` agent definitions in `dir` (confined to `root`).
pub(crate) fn read_agents(
    dir: &Path,
    root: &fsx::Root,
    plugin: &str,
    limits: &Limits,
    diags: &mut Vec<Diagnostic>,
) -> Vec<AgentSpec> {
    let walk = Walk {
        extension: ".md",
        max_depth: 1,
        max_files: limits.max_files_per_plugin,
        confine: Some(root),
    };
    let (files, found) = walk_files(dir, &walk);
    diags.extend(found.into_iter().map(|mut d| {
        if d.kind == DiagnosticKind::CommandSkipped {
            d.kind = DiagnosticKind::AgentSkipped;
        }
        d
    }));
    let mut out = Vec::new();
    for f in files {
        let stem = f.segments.last().map(String::as_str).unwrap_or_default();
        match read_agent(&f.path, stem, plugin, limits) {
            Ok(a) => out.push(a),
            Err(d) => diags.push(d),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_becomes_a_spec() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("reviewer.md");
        std::fs::write(
            &p,
            "---\nname: code-reviewer\ndescription: Reviews code\ntools: Read, Grep,Glob\nmodel: sonnet\n---\nYou review code.\n",
        )
        .unwrap();
        let a = read_agent(&p, "reviewer", "kit", &Limits::default()).unwrap();
        assert_eq!(a.qualified, "kit:code-reviewer");
        assert_eq!(
            a.tools.as_deref(),
            Some(&["Read".to_owned(), "Grep".into(), "Glob".into()][..])
        );
        assert_eq!(a.model.as_deref(), Some("sonnet"));
        assert_eq!(a.system_prompt, "You review code.");
        std::fs::write(&p, "---\nname: x\n---\nbody").unwrap();
        let e = read_agent(&p, "reviewer", "kit", &Limits::default()).unwrap_err();
        assert_eq!(e.kind, DiagnosticKind::AgentSkipped);
    }
}
