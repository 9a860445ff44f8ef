//! The model-facing tools every gateway session has: `ListMcpSources` (the
//! cached state of every source and of reconciliation; never contacts an
//! upstream) and `RefreshMcpSources` (a reconciliation cycle, then — in a
//! durable session — the names active now granted).

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::json;

use crate::gateway::Shared;
use crate::sessions::OpenSession;

/// Name of the status tool.
pub const LIST_SOURCES: &str = "ListMcpSources";
/// Name of the refresh tool.
pub const REFRESH_SOURCES: &str = "RefreshMcpSources";
/// The names of the gateway's own tools (no server's tool may be listed under them).
pub const NAMES: [&str; 2] = [LIST_SOURCES, REFRESH_SOURCES];

fn empty_schema() -> Arc<serde_json::Map<String, serde_json::Value>> {
    let mut schema = serde_json::Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), json!({}));
    Arc::new(schema)
}

/// The two tools as `tools/list` shows them.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            LIST_SOURCES,
            "Lists every MCP source (configured, per-session and discovered servers, skill roots, discovery sources such as ToolHive with their last success, last error and staleness) with its cached state, the catalog revision and reconciliation status. Never contacts a server.",
            empty_schema(),
        ),
        Tool::new(
            REFRESH_SOURCES,
            "Reconciles MCP sources now and grants this session the tool names active after it (a union: nothing is taken away). Reports the revision it pinned and what changed.",
            empty_schema(),
        ),
    ]
}

/// The JSON of `ListMcpSources` and `GET /v1/sources`.
pub(crate) fn sources_json(shared: &Shared) -> serde_json::Value {
    // Read before the report: a change after it is past this number.
    let updates = *shared.host.discovery_updates().borrow();
    let report = shared.host.sources_report();
    json!({
        "updates": updates,
        "revision": report.status.catalog.revision,
        "ready": report.status.is_ready(),
        "catalog": report.status.catalog,
        "sources": report.sources,
        "discovery": report.discovery,
    })
}

/// Answers a call of one of the two tools; `None` for any other name.
pub(crate) async fn call(
    shared: &Shared,
    durable: Option<&Arc<OpenSession>>,
    name: &str,
) -> Option<Result<CallToolResult, ErrorData>> {
    let text = match name {
        LIST_SOURCES => sources_json(shared).to_string(),
        REFRESH_SOURCES => match (durable, &shared.sessions) {
            (Some(open), Some(sessions)) => {
                match sessions.refresh(shared, open.id.as_str()).await {
                    Ok(answer) => json!(answer).to_string(),
                    Err(e) => {
                        tracing::warn!(session = %open.id.as_str(), "refresh failed: {e}");
                        return Some(Ok(CallToolResult::error(vec![ContentBlock::text(
                            "the refresh failed; call ListMcpSources to see whether reconciliation is stale or running, then retry",
                        )])));
                    }
                }
            }
            _ => {
                let cycle = shared.stateless.reconcile_now().await;
                json!({
                    "revision": shared.stateless.revision().number(),
                    "cycle_changed": cycle.changed,
                    "authority_changed": false,
                    "note": "this session sees every active name; nothing to grant",
                })
                .to_string()
            }
        },
        _ => return None,
    };
    Some(Ok(CallToolResult::success(vec![ContentBlock::text(text)])))
}
