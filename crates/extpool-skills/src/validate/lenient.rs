//! Lenient mode: how a host loads skills (the agentskills.io client guide).
//!
//! A skill is skipped only when its description is missing or empty (or its
//! YAML cannot be parsed, decided before this module runs). Everything else
//! is a warning: a bad or mismatched name, an over-long description, fields
//! of the wrong shape (ignored), unknown fields (ignored). The fields agent
//! hosts add — `disable-model-invocation`, `user-invocable`, `argument-hint`,
//! `arguments`, `always_active`, `mcp_servers` — are understood here.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diagnostic::{DiagnosticCode, Severity, Sink};
use crate::skill::{EmbeddedServerSpec, SkillMeta};
use crate::yaml::{Entry, Node, Quirk};

use super::strict::{ALLOWED_FIELDS, MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS};
use super::{Lines, name};

/// Host fields this crate acts on.
const UNDERSTOOD: [&str; 6] = [
    "disable-model-invocation",
    "user-invocable",
    "argument-hint",
    "arguments",
    "always_active",
    "mcp_servers",
];

/// Fields other hosts define (Claude Code, Codex); accepted and ignored.
const KNOWN_IGNORED: [&str; 11] = [
    "when_to_use",
    "disallowed-tools",
    "model",
    "effort",
    "context",
    "agent",
    "background",
    "hooks",
    "paths",
    "shell",
    "version",
];

fn warn(sink: &mut Sink<'_>, code: DiagnosticCode, line: usize, message: impl Into<String>) {
    sink.push(Severity::Warning, code, Some(line), message);
}

/// Reports duplicate keys (the last one wins when loading).
pub(crate) fn report_quirks(quirks: &[Quirk], lines: &Lines, sink: &mut Sink<'_>) {
    for q in quirks {
        if let Quirk::DuplicateKey { key, line } = q {
            warn(
                sink,
                DiagnosticCode::InvalidYaml,
                lines.file(*line),
                format!("duplicate key '{key}' in frontmatter; the last one is used"),
            );
        }
    }
}

/// Builds the metadata of a skill, or `None` when it must be skipped.
pub(crate) fn load(
    map: &Node,
    source: &str,
    dir: &str,
    lines: &Lines,
    sink: &mut Sink<'_>,
) -> Option<SkillMeta> {
    let description = match map.get("description") {
        None => {
            sink.push(
                Severity::Error,
                DiagnosticCode::MissingField,
                Some(lines.opening),
                "Missing required field in frontmatter: description",
            );
            return None;
        }
        Some(e) => match e.value.as_str() {
            Some(d) if !d.trim().is_empty() => {
                let len = d.chars().count();
                if len > MAX_DESCRIPTION_CHARS {
                    warn(
                        sink,
                        DiagnosticCode::InvalidDescription,
                        lines.file(e.line),
                        format!(
                            "Description exceeds {MAX_DESCRIPTION_CHARS} character limit ({len} chars)"
                        ),
                    );
                }
                one_line(d)
            }
            _ => {
                sink.push(
                    Severity::Error,
                    DiagnosticCode::InvalidDescription,
                    Some(lines.file(e.line)),
                    "Field 'description' must be a non-empty string",
                );
                return None;
            }
        },
    };

    let name = load_name(map.get("name"), dir, lines, sink);
    let mut meta = SkillMeta::new(name, description);
    meta.frontmatter_yaml = source.to_owned();

    let Node::Map { entries, .. } = map else {
        return Some(meta);
    };
    for e in entries {
        let line = lines.file(e.line);
        match e.key.as_str() {
            "name" | "description" => {}
            "license" => meta.license = string_field(e, line, sink),
            "compatibility" => {
                meta.compatibility = string_field(e, line, sink);
                if let Some(c) = &meta.compatibility {
                    let len = c.chars().count();
                    if len > MAX_COMPATIBILITY_CHARS {
                        warn(
                            sink,
                            DiagnosticCode::InvalidCompatibility,
                            line,
                            format!(
                                "Compatibility exceeds {MAX_COMPATIBILITY_CHARS} character limit ({len} chars)"
                            ),
                        );
                    }
                }
            }
            "metadata" => meta.metadata = metadata(e, lines, sink),
            "allowed-tools" => meta.allowed_tools = word_list(e, line, sink, split_tools),
            "disable-model-invocation" => {
                meta.disable_model_invocation = bool_field(e, line, sink, false);
            }
            "user-invocable" => meta.user_invocable = bool_field(e, line, sink, true),
            "always_active" => meta.always_active = bool_field(e, line, sink, false),
            "argument-hint" => meta.argument_hint = argument_hint(e, line, sink),
            "arguments" => meta.arguments = arguments(e, line, sink),
            "mcp_servers" => meta.mcp_servers = mcp_servers(e, lines, sink),
            key if KNOWN_IGNORED.contains(&key) => {}
            key => {
                debug_assert!(!ALLOWED_FIELDS.contains(&key) && !UNDERSTOOD.contains(&key));
                warn(
                    sink,
                    DiagnosticCode::UnknownField,
                    line,
                    format!("Unknown field '{key}' in frontmatter (ignored)"),
                );
            }
        }
    }
    Some(meta)
}

/// Collapses whitespace runs to single spaces (a description is one line in
/// catalogs), without allocating twice for the usual already-clean text.
fn one_line(d: &str) -> String {
    let clean =
        d.trim() == d && !d.contains(|c: char| c.is_whitespace() && c != ' ') && !d.contains("  ");
    if clean {
        d.to_owned()
    } else {
        d.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

fn load_name(entry: Option<&Entry>, dir: &str, lines: &Lines, sink: &mut Sink<'_>) -> String {
    let Some(e) = entry else {
        warn(
            sink,
            DiagnosticCode::MissingField,
            lines.opening,
            format!(
                "Missing required field in frontmatter: name; using the directory name '{dir}'"
            ),
        );
        return dir.to_owned();
    };
    let line = lines.file(e.line);
    let raw = e.value.as_str().map(str::trim).unwrap_or_default();
    for p in name::check(raw, Some(dir)) {
        let code = if p.is_mismatch() {
            DiagnosticCode::NameMismatch
        } else {
            DiagnosticCode::InvalidName
        };
        warn(sink, code, line, p.message());
    }
    if name::usable_as_identifier(raw) {
        name::nfkc(raw)
    } else {
        warn(
            sink,
            DiagnosticCode::InvalidName,
            line,
            format!("the name cannot identify the skill; using the directory name '{dir}'"),
        );
        dir.to_owned()
    }
}

fn wrong_shape(sink: &mut Sink<'_>, key: &str, line: usize, expected: &str) {
    warn(
        sink,
        DiagnosticCode::InvalidField,
        line,
        format!("Field '{key}' must be {expected} (ignored)"),
    );
}

fn string_field(e: &Entry, line: usize, sink: &mut Sink<'_>) -> Option<String> {
    match e.value.as_str() {
        Some(s) => Some(s.to_owned()),
        None => {
            wrong_shape(sink, &e.key, line, "a string");
            None
        }
    }
}

fn bool_field(e: &Entry, line: usize, sink: &mut Sink<'_>, default: bool) -> bool {
    match e.value.as_bool() {
        Some(b) => b,
        None => {
            wrong_shape(sink, &e.key, line, "true or false");
            default
        }
    }
}

fn metadata(e: &Entry, lines: &Lines, sink: &mut Sink<'_>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Node::Map { entries, .. } = &e.value else {
        wrong_shape(
            sink,
            "metadata",
            lines.file(e.line),
            "a mapping of strings to strings",
        );
        return out;
    };
    for m in entries {
        let value = match m.value.as_str() {
            Some(s) => s.to_owned(),
            None => {
                warn(
                    sink,
                    DiagnosticCode::InvalidField,
                    lines.file(m.line),
                    format!("metadata '{}' is not a string; kept as JSON", m.key),
                );
                m.value.to_json().to_string()
            }
        };
        out.insert(m.key.clone(), value);
    }
    out
}

/// A field that is a space-separated string or a list of strings.
fn word_list(
    e: &Entry,
    line: usize,
    sink: &mut Sink<'_>,
    split: fn(&str) -> Vec<String>,
) -> Option<Vec<String>> {
    match &e.value {
        Node::Scalar { value, .. } => Some(split(value)),
        Node::Seq { items, .. } if items.iter().all(|i| i.as_str().is_some()) => Some(
            items
                .iter()
                .filter_map(Node::as_str)
                .flat_map(split)
                .collect(),
        ),
        _ => {
            wrong_shape(
                sink,
                &e.key,
                line,
                "a space-separated string or a list of strings",
            );
            None
        }
    }
}

/// Splits `allowed-tools` on whitespace outside parentheses, so that
/// `Bash(git diff *) Read` is two entries.
pub(crate) fn split_tools(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn split_words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

fn arguments(e: &Entry, line: usize, sink: &mut Sink<'_>) -> Vec<String> {
    let names = word_list(e, line, sink, split_words).unwrap_or_default();
    let (numeric, named): (Vec<_>, Vec<_>) = names
        .into_iter()
        .partition(|n| n.bytes().all(|b| b.is_ascii_digit()));
    if !numeric.is_empty() {
        warn(
            sink,
            DiagnosticCode::InvalidField,
            line,
            format!(
                "numeric argument names are positional already and were dropped: {}",
                numeric.join(", ")
            ),
        );
    }
    named
}

/// `argument-hint` is display text; `[issue-number]` parses as a YAML list,
/// which is shown the way its author wrote it.
fn argument_hint(e: &Entry, line: usize, sink: &mut Sink<'_>) -> Option<String> {
    match &e.value {
        Node::Scalar { value, .. } => Some(value.clone()),
        Node::Seq { items, .. } if items.iter().all(|i| i.as_str().is_some()) => Some(
            items
                .iter()
                .filter_map(Node::as_str)
                .map(|s| format!("[{s}]"))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => {
            wrong_shape(sink, "argument-hint", line, "a string");
            None
        }
    }
}

/// `mcp_servers` as a mapping `name: config`, a list of names (servers
/// configured elsewhere; config `null`), or a list of mappings with `name`.
fn mcp_servers(e: &Entry, lines: &Lines, sink: &mut Sink<'_>) -> Vec<EmbeddedServerSpec> {
    let mut out = Vec::new();
    match &e.value {
        Node::Map { entries, .. } => {
            for s in entries {
                out.push(EmbeddedServerSpec {
                    name: s.key.clone(),
                    config: s.value.to_json(),
                });
            }
        }
        Node::Seq { items, .. } => {
            for item in items {
                match item {
                    Node::Scalar { value, .. } => out.push(EmbeddedServerSpec {
                        name: value.clone(),
                        config: Value::Null,
                    }),
                    Node::Map { .. } => match item.get("name").and_then(|n| n.value.as_str()) {
                        Some(name) => {
                            let mut config = item.to_json();
                            if let Value::Object(m) = &mut config {
                                m.remove("name");
                            }
                            out.push(EmbeddedServerSpec {
                                name: name.to_owned(),
                                config,
                            });
                        }
                        None => wrong_shape(
                            sink,
                            "mcp_servers",
                            lines.file(item.line()),
                            "a list of names or of mappings with a 'name'",
                        ),
                    },
                    Node::Seq { .. } => wrong_shape(
                        sink,
                        "mcp_servers",
                        lines.file(item.line()),
                        "a list of names or of mappings with a 'name'",
                    ),
                }
            }
        }
        Node::Scalar { .. } => wrong_shape(
            sink,
            "mcp_servers",
            lines.file(e.line),
            "a mapping of server names to configurations",
        ),
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| {
        let fresh = seen.insert(s.name.clone());
        if !fresh {
            warn(
                sink,
                DiagnosticCode::InvalidField,
                lines.file(e.line),
                format!("mcp_servers declares '{}' twice; the first is used", s.name),
            );
        }
        fresh
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_become_one_line() {
        assert_eq!(
            one_line("Does  things\n and\tmore "),
            "Does things and more"
        );
        assert_eq!(one_line("Already clean."), "Already clean.");
    }

    #[test]
    fn allowed_tools_split_outside_parentheses() {
        assert_eq!(
            split_tools("Bash(git diff *) Read  mcp__github__create_issue"),
            ["Bash(git diff *)", "Read", "mcp__github__create_issue"]
        );
        assert!(split_tools("   ").is_empty());
    }
}
