//! Reading command files: Markdown with optional YAML frontmatter (Claude
//! Code, Codex) and TOML (Gemini CLI), each failure one located diagnostic.

use std::path::Path;

use extpool_config::tree::{Value, parse_toml};
use serde_json::Value as Json;

use super::{CommandOrigin, CommandSpec, Dialect};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::fsx::{self, Walk, walk_files};
use crate::limits::Limits;

/// Where a command comes from, for naming it.
pub(crate) struct Context<'a> {
    /// Its precedence class.
    pub origin: CommandOrigin,
    /// The plugin providing it: name and root.
    pub plugin: Option<(&'a str, &'a Path)>,
    /// A prefix its name gets (`prompts` for Codex prompts).
    pub prefix: Option<&'a str>,
}

impl Context<'_> {
    fn name(&self, local: &str) -> String {
        let local = match self.prefix {
            Some(p) => format!("{p}:{local}"),
            None => local.to_owned(),
        };
        match self.plugin {
            Some((plugin, _)) => crate::names::qualified(plugin, &local),
            None => local,
        }
    }

    fn local(&self, local: &str) -> String {
        match self.prefix {
            Some(p) => format!("{p}:{local}"),
            None => local.to_owned(),
        }
    }
}

/// The frontmatter lines of `text` (between a first line `---` and the
/// next `---` line) and the 1-based line of the opening delimiter.
fn frontmatter_lines(text: &str) -> Option<(Vec<&str>, usize)> {
    let mut lines = text.lines().enumerate();
    let (opening, first) = lines.find(|(_, l)| !l.trim().is_empty())?;
    if first.trim() != "---" {
        return None;
    }
    let mut yaml = Vec::new();
    for (_, line) in lines {
        if line.trim() == "---" {
            return Some((yaml, opening + 1));
        }
        yaml.push(line);
    }
    None
}

/// Quotes every top-level `key: value` plain value: how hosts read the
/// frontmatter YAML refuses (`argument-hint: [a] [b]`, a value with `: `).
fn quoted(yaml: &[&str]) -> String {
    let mut out = String::from("---\n");
    for line in yaml {
        let fixed = line.split_once(':').and_then(|(key, value)| {
            let v = value.trim();
            let plain_key = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            let quoted = v.starts_with(['"', '\'', '|', '>']);
            (plain_key && !v.is_empty() && !quoted)
                .then(|| format!("{key}: '{}'", v.replace('\'', "''")))
        });
        out.push_str(fixed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out.push_str("---\n");
    out
}

/// The frontmatter as a JSON object (empty without one), or why it cannot
/// be read, located.
fn frontmatter(text: &str) -> Result<serde_json::Map<String, Json>, (usize, String)> {
    let Some((yaml, opening)) = frontmatter_lines(text) else {
        if text.trim_start().starts_with("---") {
            return Err((1, "the frontmatter is not closed with a `---` line".into()));
        }
        return Ok(serde_json::Map::new());
    };
    let parsed = extpool_skills::frontmatter_json(text)
        .or_else(|first| extpool_skills::frontmatter_json(&quoted(&yaml)).map_err(|_| first));
    match parsed {
        Ok(Json::Object(map)) => Ok(map),
        Ok(Json::Null) => Ok(serde_json::Map::new()),
        Ok(_) => Err((opening, "the frontmatter must be a YAML mapping".into())),
        Err(e) => Err((e.line, format!("invalid frontmatter: {}", e.message))),
    }
}

/// A frontmatter value as display text: a string as is, a list joined
/// (`[a, b]` of `argument-hint: [a] [b]` read as YAML becomes `[a] [b]`).
fn text_of(value: &Json, bracket_items: bool) -> Option<String> {
    match value {
        Json::String(s) => Some(s.clone()),
        Json::Array(items) => Some(
            items
                .iter()
                .filter_map(|i| text_of(i, false))
                .map(|i| if bracket_items { format!("[{i}]") } else { i })
                .collect::<Vec<_>>()
                .join(if bracket_items { " " } else { ", " }),
        ),
        Json::Null => None,
        other => Some(other.to_string()),
    }
}

/// The first non-empty line of a body, as a fallback description.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .trim_start_matches('#')
        .trim();
    line.chars().take(200).collect()
}

/// Reads a Markdown command file (Claude Code or Codex).
pub(crate) fn read_markdown_command(
    path: &Path,
    local: &str,
    dialect: Dialect,
    ctx: &Context<'_>,
    limits: &Limits,
) -> Result<CommandSpec, Diagnostic> {
    let skipped = |line: Option<usize>, message: String| {
        let d = Diagnostic::error(
            DiagnosticKind::CommandSkipped,
            path,
            format!("command skipped: {message}"),
        );
        match line {
            Some(l) => d.at(l),
            None => d,
        }
    };
    let text = fsx::read_text(path, limits.max_file_bytes)
        .map_err(|e| e.diagnostic(DiagnosticKind::CommandSkipped, path))?;
    let fm = frontmatter(&text).map_err(|(line, m)| skipped(Some(line), m))?;
    let body = extpool_skills::skill::body_from_bytes(path, text.as_bytes())
        .map_err(|e| skipped(None, e.to_string()))?;
    let body = if frontmatter_lines(&text).is_some() {
        body
    } else {
        text.replace("\r\n", "\n").trim().to_owned()
    };
    let get = |key: &str| fm.get(key).and_then(|v| text_of(v, false));
    let argument_hint = fm
        .get("argument-hint")
        .or_else(|| fm.get("argument_hint"))
        .and_then(|v| text_of(v, true));
    let arguments = match fm.get("arguments") {
        Some(Json::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Json::Array(items)) => items.iter().filter_map(|i| text_of(i, false)).collect(),
        _ => Vec::new(),
    };
    Ok(CommandSpec {
        name: ctx.name(local),
        local_name: ctx.local(local),
        dialect,
        description: get("description").unwrap_or_else(|| first_line(&body)),
        argument_hint,
        allowed_tools: get("allowed-tools"),
        model: get("model"),
        arguments,
        body,
        path: path.to_owned(),
        origin: ctx.origin,
        plugin: ctx.plugin.map(|(n, _)| n.to_owned()),
        plugin_root: ctx.plugin.map(|(_, r)| r.to_owned()),
    })
}

/// Reads a Gemini CLI TOML command file: `prompt` (required string),
/// `description` (optional string; default "Custom command from <file>").
pub(crate) fn read_toml_command(
    path: &Path,
    local: &str,
    ctx: &Context<'_>,
    limits: &Limits,
) -> Result<CommandSpec, Diagnostic> {
    let skipped = |line: usize, message: String| {
        Diagnostic::error(
            DiagnosticKind::CommandSkipped,
            path,
            format!("command skipped: {message}"),
        )
        .at(line)
    };
    let text = fsx::read_text(path, limits.max_file_bytes)
        .map_err(|e| e.diagnostic(DiagnosticKind::CommandSkipped, path))?;
    let root = parse_toml(&text)
        .map_err(|e| skipped(e.pos.line, format!("invalid TOML: {}", e.message)))?;
    let prompt = match root.get("prompt") {
        Some(n) => match &n.value {
            Value::Str(s) => s.clone(),
            _ => {
                return Err(skipped(
                    n.pos.line,
                    "the 'prompt' field must be a string".into(),
                ));
            }
        },
        None => return Err(skipped(1, "the 'prompt' field is required".into())),
    };
    let description = match root.get("description") {
        Some(n) => match &n.value {
            Value::Str(s) => s.clone(),
            _ => {
                return Err(skipped(
                    n.pos.line,
                    "the 'description' field must be a string".into(),
                ));
            }
        },
        None => format!(
            "Custom command from {}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
    };
    Ok(CommandSpec {
        name: ctx.name(local),
        local_name: ctx.local(local),
        dialect: Dialect::GeminiToml,
        description,
        argument_hint: None,
        allowed_tools: None,
        model: None,
        arguments: Vec::new(),
        body: prompt,
        path: path.to_owned(),
        origin: ctx.origin,
        plugin: ctx.plugin.map(|(n, _)| n.to_owned()),
        plugin_root: ctx.plugin.map(|(_, r)| r.to_owned()),
    })
}

/// A Gemini CLI name segment: characters other than letters, digits,
/// `_`, `-`, `.` become `_` (as its command loader does).
fn gemini_segment(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Reads every command file of `dialect` in `dir` (a command folder, or a
/// plugin's `commands/` confined to its root): subfolders are namespaces
/// joined with `:` (Codex prompts: only the folder's own files).
pub(crate) fn read_folder(
    dir: &Path,
    dialect: Dialect,
    ctx: &Context<'_>,
    confine: Option<&fsx::Root>,
    limits: &Limits,
) -> (Vec<CommandSpec>, Vec<Diagnostic>) {
    let walk = Walk {
        extension: match dialect {
            Dialect::GeminiToml => ".toml",
            _ => ".md",
        },
        max_depth: match dialect {
            Dialect::CodexPrompt => 1,
            _ => limits.max_command_depth,
        },
        max_files: limits.max_commands_per_folder,
        confine,
    };
    let (files, mut diags) = walk_files(dir, &walk);
    let mut out = Vec::new();
    for f in files {
        let read = match dialect {
            Dialect::GeminiToml => {
                let local = f
                    .segments
                    .iter()
                    .map(|s| gemini_segment(s))
                    .collect::<Vec<_>>()
                    .join(":");
                read_toml_command(&f.path, &local, ctx, limits)
            }
            _ => read_markdown_command(&f.path, &f.segments.join(":"), dialect, ctx, limits),
        };
        match read {
            Ok(spec) => out.push(spec),
            Err(d) => diags.push(d),
        }
    }
    (out, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_lenient_frontmatter_is_read() {
        let fm = frontmatter("---\nargument-hint: [pr] [priority]\ndescription: a: b\n---\nbody")
            .unwrap();
        assert_eq!(fm["argument-hint"], "[pr] [priority]");
        assert_eq!(fm["description"], "a: b");
        let fm = frontmatter("---\nargument-hint: [message]\n---\n").unwrap();
        assert_eq!(text_of(&fm["argument-hint"], true).unwrap(), "[message]");
        assert!(frontmatter("no frontmatter\n").unwrap().is_empty());
        assert_eq!(frontmatter("---\na: 1\n").unwrap_err().0, 1);
    }

    #[test]
    fn gemini_names_are_sanitized() {
        assert_eq!(gemini_segment("a b@c"), "a_b_c");
    }
}
