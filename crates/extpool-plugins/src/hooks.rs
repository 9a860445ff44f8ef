//! Hooks (`hooks/hooks.json`, or inline in a Claude Code manifest): listed
//! so people see what a plugin would run in its host — event, matcher,
//! command — and never run by extpool.
//!
//! The shape is Claude Code's and Gemini CLI's:
//! `{"hooks": {"<Event>": [{"matcher": "…", "hooks": [{"type": "command",
//! "command": "…"}]}]}}`; an inline manifest value may also be the event
//! map itself.

use std::path::{Path, PathBuf};

use extpool_config::tree::{Node, Value};
use serde::Serialize;

use crate::diag::{Diagnostic, DiagnosticKind};

/// One hook a plugin declares. extpool never runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookSpec {
    /// The host event (`PreToolUse`, `SessionStart`, …).
    pub event: String,
    /// Which tools or sources it applies to, when it says.
    pub matcher: Option<String>,
    /// Its `type` (`command`, `prompt`, …).
    pub kind: String,
    /// The command text its host would run, for a command hook.
    pub command: Option<String>,
    /// Where it is declared.
    pub path: PathBuf,
    /// Always false: extpool lists hooks and runs none.
    pub run_by_extpool: bool,
}

/// The hooks in a parsed hooks document (`file` names it in messages).
pub(crate) fn read(node: &Node, file: &Path, diags: &mut Vec<Diagnostic>) -> Vec<HookSpec> {
    let events = match node.get("hooks") {
        Some(inner) if inner.as_map().is_some() => inner,
        Some(other) => {
            diags.push(
                Diagnostic::error(
                    DiagnosticKind::HooksSkipped,
                    file,
                    "hooks not listed: \"hooks\" must be an object of events",
                )
                .at(other.pos.line),
            );
            return Vec::new();
        }
        None => node,
    };
    let Some(entries) = events.as_map() else {
        diags.push(
            Diagnostic::error(
                DiagnosticKind::HooksSkipped,
                file,
                "hooks not listed: expected an object of events",
            )
            .at(events.pos.line),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for event in entries {
        let Value::Seq(groups) = &event.value.value else {
            diags.push(
                Diagnostic::warning(
                    DiagnosticKind::HooksSkipped,
                    file,
                    format!("hooks of {:?} not listed: expected a list", event.key),
                )
                .at(event.value.pos.line),
            );
            continue;
        };
        for group in groups {
            let matcher = group
                .get("matcher")
                .and_then(Node::as_str)
                .map(str::to_owned);
            let Some(Value::Seq(hooks)) = group.get("hooks").map(|h| &h.value) else {
                continue;
            };
            for h in hooks {
                out.push(HookSpec {
                    event: event.key.clone(),
                    matcher: matcher.clone(),
                    kind: h
                        .get("type")
                        .and_then(Node::as_str)
                        .unwrap_or("command")
                        .to_owned(),
                    command: h.get("command").and_then(Node::as_str).map(str::to_owned),
                    path: file.to_owned(),
                    run_by_extpool: false,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_listed() {
        let node = crate::json::parse(
            r#"{"hooks": {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/fmt.sh"}]}], "Stop": 3}}"#,
        )
        .unwrap();
        let mut d = Vec::new();
        let hooks = read(&node, Path::new("h.json"), &mut d);
        assert_eq!(hooks.len(), 1);
        assert_eq!(hooks[0].event, "PostToolUse");
        assert_eq!(hooks[0].matcher.as_deref(), Some("Write|Edit"));
        assert!(!hooks[0].run_by_extpool);
        assert_eq!(d.len(), 1);
    }
}
