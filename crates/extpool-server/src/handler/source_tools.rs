//! The model-facing tools every gateway session has: `ListMcpSources` (the
//! cached state of every source and of reconciliation; never contacts an
//! upstream) and `RefreshMcpSources` (a reconciliation cycle, then — in a
//! durable session — the names active now granted); and, on a durable
//! session's endpoint only, `CloseSession` (the session closed as `DELETE
//! /v1/sessions/{id}` closes it, by the same function). Their definitions
//! are the catalog's, with the other built-ins; the session's table lists
//! them.

use std::sync::Arc;

use extpool_host::catalog::BuiltinTool;
use extpool_host::core::Principal;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use crate::sessions::OpenSession;
use crate::shared::Shared;

/// The gateway's own built-ins, listed after the catalog's.
pub const TOOLS: [BuiltinTool; 2] = [BuiltinTool::ListMcpSources, BuiltinTool::RefreshMcpSources];

/// The gateway's own built-ins on a durable session's endpoint: [`TOOLS`]
/// and `CloseSession`.
pub const SESSION_TOOLS: [BuiltinTool; 3] = [
    BuiltinTool::ListMcpSources,
    BuiltinTool::RefreshMcpSources,
    BuiltinTool::CloseSession,
];

/// The JSON of `ListMcpSources` and `GET /v1/sources`.
pub(crate) fn sources_json(shared: &Shared) -> serde_json::Value {
    // Read before the report: a change after it is past this number.
    let updates = *shared.host.discovery_updates().borrow();
    sources_value(updates, &shared.host.sources_report())
}

/// [`sources_json`] of a report already read (`updates`: the discovery
/// counter read before it), for the operator page, which shows the same.
pub(crate) fn sources_value(
    updates: u64,
    report: &extpool_host::SourcesReport,
) -> serde_json::Value {
    json!({
        "updates": updates,
        "revision": report.status.catalog.revision,
        "ready": report.status.is_ready(),
        "catalog": report.status.catalog,
        "sources": report.sources,
        "discovery": report.discovery,
    })
}

/// The sources as the model reads them (`ListMcpSources`): what each server
/// said it is without its icons, which are for people's screens and may be
/// data URIs of any size; the rest as `GET /v1/sources` answers.
fn for_model(mut sources: serde_json::Value) -> serde_json::Value {
    if let Some(rows) = sources
        .get_mut("sources")
        .and_then(serde_json::Value::as_array_mut)
    {
        for row in rows {
            if let Some(implementation) = row
                .get_mut("implementation")
                .and_then(serde_json::Value::as_object_mut)
            {
                implementation.remove("icons");
            }
        }
    }
    sources
}

/// Answers a call of one of the gateway's tools for `principal`; `None`
/// for any other.
pub(crate) async fn call(
    shared: &Shared,
    durable: Option<&Arc<OpenSession>>,
    principal: &Principal,
    tool: BuiltinTool,
) -> Option<Result<CallToolResult, ErrorData>> {
    let text = match tool {
        BuiltinTool::CloseSession => return Some(Ok(close(shared, durable, principal).await)),
        BuiltinTool::ListMcpSources => for_model(sources_json(shared)).to_string(),
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
                let cycle = shared.access.stateless.reconcile_now().await;
                json!({
                    "revision": shared.access.stateless.revision().number(),
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

/// `CloseSession`: the durable session of this endpoint closed for
/// `principal` by the one function `DELETE /v1/sessions/{id}` calls
/// ([`crate::sessions::Sessions::delete`]); a tool error saying why where
/// there is none.
async fn close(
    shared: &Shared,
    durable: Option<&Arc<OpenSession>>,
    principal: &Principal,
) -> CallToolResult {
    let (Some(open), Some(sessions)) = (durable, &shared.sessions) else {
        return CallToolResult::error(vec![ContentBlock::text(
            "CloseSession closes a durable session and is offered only on its endpoint (/sessions/{id}/mcp); this connection belongs to none",
        )]);
    };
    let id = open.id.as_str();
    match sessions.delete(shared, id, principal).await {
        Ok(servers) => CallToolResult::success(vec![ContentBlock::text(closed_text(
            &crate::sessions::ids::shown(&open.id, Some(principal)),
            &servers,
        ))]),
        Err(e) => {
            tracing::warn!(session = %id, "CloseSession failed: {e}");
            CallToolResult::error(vec![ContentBlock::text(format!(
                "session {id} was not closed: {e}"
            ))])
        }
    }
}

/// What `CloseSession` answers once session `id` is closed.
fn closed_text(id: &str, servers: &[String]) -> String {
    match servers {
        [] => format!("session {id} was closed"),
        _ => format!(
            "session {id} was closed; its servers stopped: {}",
            servers.join(", ")
        ),
    }
}
