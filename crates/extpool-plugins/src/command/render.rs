//! Rendering a command with the user's arguments, by its host's rules —
//! and never running what it asks the host to run.
//!
//! - Claude Code: extpool-skills' substitution (the one owner of Claude
//!   Code's argument rules: `$ARGUMENTS`, `$ARGUMENTS[N]`, 0-based `$N`,
//!   named `arguments`, the `ARGUMENTS:` line when nothing was
//!   substituted), plus `${CLAUDE_PLUGIN_ROOT}` for a plugin's commands,
//!   in the same single pass.
//! - Codex custom prompts: `$1`…`$9` (1-based), `$ARGUMENTS` (every
//!   positional argument joined by a space), `$$` kept; a prompt with named
//!   placeholders (`$FILE`, `$TICKET_ID`) takes `KEY=value` arguments only,
//!   and every placeholder must be given.
//! - Gemini CLI: `{{args}}` becomes the argument line; without it, a
//!   non-empty argument line is appended after a blank line as the
//!   invocation (`/name args`).
//!
//! Inline shell (`` !`cmd` ``, ```` ```! ```` blocks, Gemini's `!{…}`) and
//! file inclusion (`@path`, Gemini's `@{…}`) are the host's to run: extpool
//! leaves them as text and says so once, in a note after the prompt.

use std::collections::BTreeMap;

use extpool_skills::args::{join_args, substitute_vars};

use super::{CommandSpec, Dialect};

/// Why a command could not be rendered with the given arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// A Codex prompt with named placeholders got an argument that is not `KEY=value`.
    #[error(
        "command {command}: expected KEY=value but found {token:?} (this prompt takes named arguments: {keys})"
    )]
    NotAnAssignment {
        /// The command.
        command: String,
        /// The argument.
        token: String,
        /// The placeholders it takes.
        keys: String,
    },
    /// A Codex prompt's named placeholders were not all given.
    #[error("command {command}: missing required arguments: {missing}")]
    Missing {
        /// The command.
        command: String,
        /// The placeholders not given, comma-separated.
        missing: String,
    },
}

/// The note appended when a command asks its host to run something.
pub const HOST_RUNS_NOTE: &str = "[extpool: this command asks the host to run shell commands or include files; extpool ran and included nothing, they are shown above as written]";

/// Renders `spec` with `args` (already split, as typed after the name).
pub fn render(spec: &CommandSpec, args: &[String]) -> Result<String, RenderError> {
    let mut out = match spec.dialect {
        Dialect::ClaudeCode => {
            let root = spec
                .plugin_root
                .as_ref()
                .map(|r| r.to_string_lossy().into_owned());
            let vars: Vec<(&str, &str)> = root
                .as_deref()
                .map(|r| vec![("CLAUDE_PLUGIN_ROOT", r)])
                .unwrap_or_default();
            substitute_vars(&spec.body, args, &spec.arguments, &vars)
        }
        Dialect::CodexPrompt => codex(spec, args)?,
        Dialect::GeminiToml => gemini(spec, args),
    };
    if asks_host_to_run(spec.dialect, &spec.body) {
        out.push_str("\n\n");
        out.push_str(HOST_RUNS_NOTE);
    }
    Ok(out)
}

/// Whether `body` holds something the host would run or include.
pub fn asks_host_to_run(dialect: Dialect, body: &str) -> bool {
    match dialect {
        Dialect::GeminiToml => body.contains("!{") || body.contains("@{"),
        Dialect::CodexPrompt => false,
        Dialect::ClaudeCode => {
            body.contains("!`")
                || body.lines().any(|l| l.trim_start().starts_with("```!"))
                || body.split_whitespace().any(|w| {
                    w.strip_prefix('@')
                        .is_some_and(|p| !p.is_empty() && (p.contains('/') || p.contains('.')))
                })
        }
    }
}

fn is_upper_word(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'
}

/// Named placeholders of a Codex prompt (`$[A-Z][A-Z0-9_]*`, not `$ARGUMENTS`).
fn named_placeholders(body: &str) -> Vec<String> {
    let b = body.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1] == b'$' {
            i += 2;
            continue;
        }
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_uppercase() {
            let end = (i + 1..b.len())
                .find(|&j| !is_upper_word(b[j]))
                .unwrap_or(b.len());
            let name = &body[i + 1..end];
            if name != "ARGUMENTS" && !out.iter().any(|n| n == name) {
                out.push(name.to_owned());
            }
            i = end;
            continue;
        }
        i += 1;
    }
    out
}

fn codex(spec: &CommandSpec, args: &[String]) -> Result<String, RenderError> {
    let named = named_placeholders(&spec.body);
    let b = spec.body.as_bytes();
    let mut out = String::with_capacity(spec.body.len());
    let mut i = 0;
    let mut last = 0;
    if !named.is_empty() {
        let mut values = BTreeMap::new();
        for a in args {
            match a.split_once('=') {
                Some((k, v)) if !k.is_empty() => {
                    values.insert(k.to_owned(), v.to_owned());
                }
                _ => {
                    return Err(RenderError::NotAnAssignment {
                        command: spec.name.clone(),
                        token: a.clone(),
                        keys: named.join(", "),
                    });
                }
            }
        }
        let missing: Vec<_> = named
            .iter()
            .filter(|n| !values.contains_key(*n))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(RenderError::Missing {
                command: spec.name.clone(),
                missing: missing.join(", "),
            });
        }
        while i < b.len() {
            if b[i] == b'$' && b.get(i + 1) == Some(&b'$') {
                i += 2;
                continue;
            }
            if b[i] == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_uppercase) {
                let end = (i + 1..b.len())
                    .find(|&j| !is_upper_word(b[j]))
                    .unwrap_or(b.len());
                if let Some(v) = values.get(&spec.body[i + 1..end]) {
                    out.push_str(&spec.body[last..i]);
                    out.push_str(v);
                    last = end;
                }
                i = end;
                continue;
            }
            i += 1;
        }
    } else {
        while i < b.len() {
            if b[i] == b'$' && b.get(i + 1) == Some(&b'$') {
                i += 2;
                continue;
            }
            if b[i] == b'$' {
                let rest = &spec.body[i + 1..];
                if let Some(d) = b.get(i + 1).filter(|d| (b'1'..=b'9').contains(d)) {
                    out.push_str(&spec.body[last..i]);
                    out.push_str(args.get(usize::from(d - b'1')).map_or("", String::as_str));
                    i += 2;
                    last = i;
                    continue;
                }
                if rest.starts_with("ARGUMENTS") {
                    out.push_str(&spec.body[last..i]);
                    out.push_str(&args.join(" "));
                    i += 1 + "ARGUMENTS".len();
                    last = i;
                    continue;
                }
            }
            i += 1;
        }
    }
    out.push_str(&spec.body[last..]);
    Ok(out)
}

fn gemini(spec: &CommandSpec, args: &[String]) -> String {
    let raw = join_args(args);
    if spec.body.contains("{{args}}") {
        spec.body.replace("{{args}}", &raw)
    } else if raw.is_empty() {
        spec.body.clone()
    } else {
        format!("{}\n\n/{} {raw}", spec.body, spec.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::CommandOrigin;

    fn spec(dialect: Dialect, body: &str) -> CommandSpec {
        CommandSpec {
            name: "c".into(),
            local_name: "c".into(),
            dialect,
            description: String::new(),
            argument_hint: None,
            allowed_tools: None,
            model: None,
            arguments: Vec::new(),
            body: body.into(),
            path: "c".into(),
            origin: CommandOrigin::User,
            plugin: None,
            plugin_root: None,
        }
    }

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn codex_positional_and_named() {
        let s = spec(Dialect::CodexPrompt, "$1|$2|$3|$ARGUMENTS|$$1");
        assert_eq!(render(&s, &a(&["x", "y"])).unwrap(), "x|y||x y|$$1");
        let s = spec(Dialect::CodexPrompt, "file $FILE focus $FOCUS $$HOME");
        assert_eq!(
            render(&s, &a(&["FILE=a.rs", "FOCUS=tests"])).unwrap(),
            "file a.rs focus tests $$HOME"
        );
        assert!(matches!(
            render(&s, &a(&["a.rs"])),
            Err(RenderError::NotAnAssignment { .. })
        ));
        assert!(matches!(
            render(&s, &a(&["FILE=a"])),
            Err(RenderError::Missing { .. })
        ));
    }

    #[test]
    fn gemini_args_and_shell_note() {
        let s = spec(Dialect::GeminiToml, "Review {{args}} now");
        assert_eq!(render(&s, &a(&["x y"])).unwrap(), "Review \"x y\" now");
        let s = spec(Dialect::GeminiToml, "Review");
        assert_eq!(render(&s, &a(&["x"])).unwrap(), "Review\n\n/c x");
        assert_eq!(render(&s, &[]).unwrap(), "Review");
        let s = spec(Dialect::GeminiToml, "Diff: !{git diff}");
        let out = render(&s, &[]).unwrap();
        assert!(out.starts_with("Diff: !{git diff}\n\n[extpool:"), "{out}");
        assert_eq!(out.matches("[extpool:").count(), 1);
    }

    #[test]
    fn claude_args_and_plugin_root() {
        let mut s = spec(
            Dialect::ClaudeCode,
            "run ${CLAUDE_PLUGIN_ROOT}/x $0 [$ARGUMENTS]",
        );
        s.plugin_root = Some("/p".into());
        assert_eq!(render(&s, &a(&["a", "b"])).unwrap(), "run /p/x a [a b]");
        let s = spec(
            Dialect::ClaudeCode,
            "Status: !`git status` and @src/main.rs",
        );
        let out = render(&s, &[]).unwrap();
        assert!(out.contains("!`git status`") && out.ends_with(HOST_RUNS_NOTE));
        let s = spec(Dialect::ClaudeCode, "mail me@example");
        assert_eq!(render(&s, &[]).unwrap(), "mail me@example");
    }
}
