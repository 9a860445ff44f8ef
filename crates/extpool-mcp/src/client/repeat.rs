//! Which interrupted requests may be sent a second time.
//!
//! When a connection drops (or an HTTP server answers 404 for the session)
//! while a request is in flight, the server may already have acted on it.
//! The behaviour doc retries the interrupted operation once and, in the same
//! breath, refuses to risk "running a mutating operation twice when its
//! first response is ambiguous". Both hold here: reads (lists, resource
//! reads, prompts, pings) are sent again; a tool call only when the server
//! marks the tool `readOnlyHint` or `idempotentHint` (trusting the hint can
//! only harm the server that gave it). Anything else returns an error that
//! says the request was not sent again. Codex and Claude Code never retry a
//! tool call at all; this is the same rule with the safe cases let through.

use std::collections::HashSet;
use std::sync::Arc;

use extpool_core::ChangeKind;
use rmcp::model::Tool;

use super::McpClient;
use crate::connection::Connection;

/// Whether a request may be sent again after it was interrupted.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Repeat<'a> {
    /// Reads and pings: always.
    Always,
    /// A call of this tool: when the server marks it read-only or idempotent.
    Tool(&'a str),
}

impl Repeat<'_> {
    /// The tool, for error messages.
    pub(crate) fn target(&self) -> Option<&str> {
        match self {
            Self::Always => None,
            Self::Tool(name) => Some(name),
        }
    }
}

/// The tools a server marks safe to repeat, as of a tools-changed epoch.
#[derive(Default)]
pub(crate) struct ToolHints {
    known: parking_lot::Mutex<Option<(u64, Arc<HashSet<String>>)>>,
    /// One listing at a time: concurrent interrupted calls share it.
    filling: tokio::sync::Mutex<()>,
}

/// True when the server says calling `tool` again has no further effect.
pub(crate) fn is_repeatable(tool: &Tool) -> bool {
    tool.annotations
        .as_ref()
        .is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true))
}

impl ToolHints {
    fn current(&self, epoch: u64) -> Option<Arc<HashSet<String>>> {
        match &*self.known.lock() {
            Some((at, set)) if *at == epoch => Some(set.clone()),
            _ => None,
        }
    }

    /// Records a tool list obtained at `epoch` (the tools counter read
    /// before the list was requested).
    pub(crate) fn record(&self, epoch: u64, tools: &[Tool]) {
        let set = tools
            .iter()
            .filter(|t| is_repeatable(t))
            .map(|t| t.name.to_string())
            .collect();
        *self.known.lock() = Some((epoch, Arc::new(set)));
    }
}

impl McpClient {
    /// The tools counter that tool hints are keyed by.
    pub(crate) fn tools_epoch(&self) -> u64 {
        self.inner.signals.epoch(ChangeKind::ToolsChanged)
    }

    /// Whether the interrupted request may be sent again on `conn`.
    pub(crate) async fn may_repeat(&self, repeat: Repeat<'_>, conn: &Connection) -> bool {
        let tool = match repeat {
            Repeat::Always => return true,
            Repeat::Tool(tool) => tool,
        };
        let hints = &self.inner.hints;
        let epoch = self.tools_epoch();
        if let Some(set) = hints.current(epoch) {
            return set.contains(tool);
        }
        let _filling = hints.filling.lock().await;
        if let Some(set) = hints.current(epoch) {
            return set.contains(tool);
        }
        let bounds = crate::listing::Bounds::new(self.inner.max_message_bytes);
        // Boxed: only a lost request lists, and every request's future
        // would otherwise carry the listing's.
        let listing = Box::pin(crate::listing::list_all::<Tool>(&conn.peer, bounds));
        let listed = tokio::time::timeout(self.inner.request_timeout, listing).await;
        match listed {
            Ok(Ok(Ok(listed))) => {
                let tools = listed.items;
                hints.record(epoch, &tools);
                tools.iter().any(|t| t.name == tool && is_repeatable(t))
            }
            _ => {
                tracing::debug!(server = %self.inner.name, tool, "could not list tools to decide on a retry; not retrying");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ToolAnnotations;

    fn tool(read_only: Option<bool>, idempotent: Option<bool>) -> Tool {
        let mut annotations = ToolAnnotations::default();
        annotations.read_only_hint = read_only;
        annotations.idempotent_hint = idempotent;
        Tool::new("t", "d", Arc::new(Default::default())).with_annotations(annotations)
    }

    #[test]
    fn only_marked_tools_are_repeatable() {
        assert!(is_repeatable(&tool(Some(true), None)));
        assert!(is_repeatable(&tool(None, Some(true))));
        assert!(!is_repeatable(&tool(Some(false), Some(false))));
        assert!(!is_repeatable(&tool(None, None)));
        assert!(!is_repeatable(&Tool::new(
            "t",
            "d",
            Arc::new(Default::default())
        )));
    }

    #[test]
    fn hints_expire_with_the_tools_epoch() {
        let hints = ToolHints::default();
        hints.record(3, &[tool(Some(true), None)]);
        assert!(hints.current(3).unwrap().contains("t"));
        assert!(hints.current(4).is_none());
    }
}
