//! Strict mode: the specification's rules with the reference validator's
//! (`skills-ref`) checks, order and messages, plus the few rules of the
//! specification that `skills-ref` does not check (each marked below).

use crate::diagnostic::{DiagnosticCode, Severity, Sink};
use crate::yaml::Node;

use super::{Lines, name};

/// The only fields the specification allows, sorted as skills-ref prints them.
pub(crate) const ALLOWED_FIELDS: [&str; 6] = [
    "allowed-tools",
    "compatibility",
    "description",
    "license",
    "metadata",
    "name",
];

/// Longest description, in characters.
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest compatibility note, in characters.
pub(crate) const MAX_COMPATIBILITY_CHARS: usize = 500;

fn error(sink: &mut Sink<'_>, code: DiagnosticCode, line: usize, message: impl Into<String>) {
    sink.push(Severity::Error, code, Some(line), message);
}

/// Checks a frontmatter mapping; `dir` is the skill directory's name.
pub(crate) fn check(map: &Node, dir: &str, lines: &Lines, sink: &mut Sink<'_>) {
    let Node::Map { entries, .. } = map else {
        return;
    };

    let mut extra: Vec<&str> = entries
        .iter()
        .map(|e| e.key.as_str())
        .filter(|k| !ALLOWED_FIELDS.contains(k))
        .collect();
    if let Some(first) = entries
        .iter()
        .find(|e| !ALLOWED_FIELDS.contains(&e.key.as_str()))
    {
        extra.sort_unstable();
        extra.dedup();
        error(
            sink,
            DiagnosticCode::UnexpectedFields,
            lines.file(first.line),
            format!(
                "Unexpected fields in frontmatter: {}. Only {} are allowed.",
                extra.join(", "),
                python_list(&ALLOWED_FIELDS)
            ),
        );
    }

    match map.get("name") {
        None => error(
            sink,
            DiagnosticCode::MissingField,
            lines.opening,
            "Missing required field in frontmatter: name",
        ),
        Some(e) => {
            let line = lines.file(e.line);
            match e.value.as_str() {
                None => error(
                    sink,
                    DiagnosticCode::InvalidName,
                    line,
                    name::NameProblem::Empty.message(),
                ),
                Some(raw) => {
                    for p in name::check(raw, Some(dir)) {
                        let code = if p.is_mismatch() {
                            DiagnosticCode::NameMismatch
                        } else {
                            DiagnosticCode::InvalidName
                        };
                        error(sink, code, line, p.message());
                    }
                }
            }
        }
    }

    match map.get("description") {
        None => error(
            sink,
            DiagnosticCode::MissingField,
            lines.opening,
            "Missing required field in frontmatter: description",
        ),
        Some(e) => {
            let line = lines.file(e.line);
            match e.value.as_str() {
                Some(d) if !d.trim().is_empty() => {
                    let len = d.chars().count();
                    if len > MAX_DESCRIPTION_CHARS {
                        error(
                            sink,
                            DiagnosticCode::InvalidDescription,
                            line,
                            format!(
                                "Description exceeds {MAX_DESCRIPTION_CHARS} character limit ({len} chars)"
                            ),
                        );
                    }
                }
                _ => error(
                    sink,
                    DiagnosticCode::InvalidDescription,
                    line,
                    "Field 'description' must be a non-empty string",
                ),
            }
        }
    }

    if let Some(e) = map.get("compatibility") {
        let line = lines.file(e.line);
        match e.value.as_str() {
            None => error(
                sink,
                DiagnosticCode::InvalidCompatibility,
                line,
                "Field 'compatibility' must be a string",
            ),
            Some(c) => {
                let len = c.chars().count();
                if len > MAX_COMPATIBILITY_CHARS {
                    error(
                        sink,
                        DiagnosticCode::InvalidCompatibility,
                        line,
                        format!(
                            "Compatibility exceeds {MAX_COMPATIBILITY_CHARS} character limit ({len} chars)"
                        ),
                    );
                } else if c.trim().is_empty() {
                    // Specification: 1-500 characters (skills-ref accepts "").
                    error(
                        sink,
                        DiagnosticCode::InvalidCompatibility,
                        line,
                        "Field 'compatibility' must not be empty (1-500 characters)",
                    );
                }
            }
        }
    }

    // Specification rules that skills-ref does not check.
    for field in ["license", "allowed-tools"] {
        if let Some(e) = map.get(field)
            && e.value.as_str().is_none()
        {
            let shape = if field == "allowed-tools" {
                "a space-separated string"
            } else {
                "a string"
            };
            error(
                sink,
                DiagnosticCode::InvalidField,
                lines.file(e.line),
                format!("Field '{field}' must be {shape}"),
            );
        }
    }
    if let Some(e) = map.get("metadata") {
        match &e.value {
            Node::Map { entries, .. } => {
                for m in entries {
                    if m.value.as_str().is_none() {
                        error(
                            sink,
                            DiagnosticCode::InvalidField,
                            lines.file(m.line),
                            format!(
                                "Field 'metadata' must map strings to strings; '{}' is not a string",
                                m.key
                            ),
                        );
                    }
                }
            }
            _ => error(
                sink,
                DiagnosticCode::InvalidField,
                lines.file(e.line),
                "Field 'metadata' must be a mapping of strings to strings",
            ),
        }
    }
}

/// Formats like Python's `str(sorted(list_of_str))`.
fn python_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("[{}]", quoted.join(", "))
}
