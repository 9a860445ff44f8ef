//! The model-facing tools every gateway session has: `ListMcpSources` (the
//! cached state of every source and of reconciliation; never contacts an
//! upstream) and `RefreshMcpSources` (a reconciliation cycle, then — in a
//! durable session — the names active now granted). Their definitions are
//! the catalog's, with the other built-ins; the session's table lists them.

use std::sync::Arc;

use extpool_host::catalog::BuiltinTool;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use crate::gateway::Shared;
use crate::sessions::OpenSession;

/// The gateway's own built-ins, listed after the catalog's.
pub const TOOLS: [BuiltinTool; 2] = [BuiltinTool::ListMcpSources, BuiltinTool::RefreshMcpSources];

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

/// Answers a call of one of the two tools; `None` for any other.
pub(crate) async fn call(
    shared: &Shared,
    durable: Option<&Arc<OpenSession>>,
    tool: BuiltinTool,
) -> Option<Result<CallToolResult, ErrorData>> {
    let text = match tool {
        BuiltinTool::ListMcpSources => sources_json(shared).to_string(),
        BuiltinTool::RefreshMcpSources => match (durable, &shared.sessions) {
            (Some(open), Some(sessions)) => match sessions.refresh_open(open).await {
                Ok(answer) => json!(answer).to_string(),
                Err(e) => {
                    tracing::warn!(session = %open.id.as_str(), "refresh failed: {e}");
                    return Some(Ok(CallToolResult::error(vec![ContentBlock::text(
                        "the refresh failed; call ListMcpSources to see whether reconciliation is stale or running, then retry",
                    )])));
                }
            },
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
