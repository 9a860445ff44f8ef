//! What the operator page shows, as JSON: built from the same functions
//! the `/v1` API and `ListMcpSources` answer with (the sources report,
//! the session store's list), so `extpool sessions` and `extpool list
//! sources` against the gateway show what the page shows.

use std::collections::HashMap;

use extpool_host::{ServerConnection, ServerState};
use serde_json::{Value, json};

use crate::shared::Shared;

/// Most sessions shown (the page says when there are more).
const SESSIONS_SHOWN: usize = 200;

/// Everything but the tools (sent on their own when the revision changes).
pub(crate) async fn snapshot(shared: &Shared) -> Value {
    let updates = *shared.host.discovery_updates().borrow();
    let report = shared.host.sources_report();
    json!({
        "replica": shared.ops.replica,
        "playground": shared.options.playground,
        "servers": servers(shared, &report),
        "catalog": catalog(shared, &report),
        "sources": crate::handler::source_tools::sources_value(updates, &report),
        "sessions": sessions(shared).await,
        "skills": skills(shared),
        "plugins": plugins(shared),
        "calls": shared.ops.page.feed.rows(),
    })
}

/// The era a negotiated protocol version belongs to.
fn era(version: &str) -> &'static str {
    // Dates compare as text.
    if version >= "2026-07-28" {
        "2026-07-28"
    } else {
        "session"
    }
}

/// Each configured or discovered server: its state as shown, how it is
/// reached, its process, its counts and its last minute of calls.
fn servers(shared: &Shared, report: &extpool_host::SourcesReport) -> Vec<Value> {
    let connections: HashMap<String, ServerConnection> = shared
        .host
        .server_connections()
        .into_iter()
        .map(|c| (c.name.clone(), c))
        .collect();
    let degraded: HashMap<String, extpool_host::Degraded> = shared
        .host
        .health()
        .degraded()
        .into_iter()
        .map(|d| (d.capability.clone(), d))
        .collect();
    let minutes = shared.ops.metrics.window().minutes();
    report
        .status
        .servers
        .iter()
        .map(|server| {
            let connection = connections.get(&server.name);
            let shown =
                ServerConnection::state(&server.state, connection, degraded.get(&server.name));
            let counts = report.status.catalog.source(&server.name);
            let version = connection.and_then(|c| c.protocol_version.clone());
            let tools = match (&server.state, counts) {
                (_, Some(s)) => Some(s.tools),
                (ServerState::Ready { tools, .. } | ServerState::Lazy { tools }, None) => {
                    Some(*tools)
                }
                _ => None,
            };
            json!({
                "name": server.name,
                "state": shown.word,
                "detail": shown.detail,
                "origin": server.origin,
                "transport": server.transport,
                "sandbox": server.sandbox.as_ref().map(|p| json!({"profile": p, "summary": p.summary()})),
                "pid": connection.and_then(|c| c.pid),
                "protocol_version": version,
                "era": version.as_deref().map(era),
                "in_flight": connection.map(|c| c.in_flight),
                "tools": tools,
                "resources": counts.map(|s| s.resources),
                "prompts": counts.map(|s| s.commands),
                "minute": minutes.get(&server.name),
            })
        })
        .collect()
}

/// The catalog: revision and when it was published, the reconciliation
/// loop, and every stale source with why.
fn catalog(shared: &Shared, report: &extpool_host::SourcesReport) -> Value {
    let status = &report.status.catalog;
    let stale: Vec<Value> = status
        .sources
        .iter()
        .filter(|s| s.stale)
        .map(|s| {
            json!({
                "source": s.id,
                "reason": s.last_error.as_ref().map(ToString::to_string),
            })
        })
        .collect();
    let state = report
        .sources
        .iter()
        .find(|r| r.kind == "catalog")
        .map(|r| r.state.clone());
    json!({
        "revision": status.revision,
        "published_ms": shared.ops.page.published_ms(status.revision),
        "state": state,
        "reconciliations": status.reconciliations,
        "failures": status.failures,
        "last_reconcile": status.last_reconcile.map(extpool_host::core::time::rfc3339),
        "stale": stale,
    })
}

/// The durable sessions, as `GET /v1/sessions` lists them to an
/// operator (its rows, by the same function).
async fn sessions(shared: &Shared) -> Value {
    let Some(sessions) = &shared.sessions else {
        return json!({"store": false, "rows": []});
    };
    let page = match sessions
        .store()
        .list_owned(None, None, SESSIONS_SHOWN)
        .await
    {
        Ok(page) => page,
        Err(e) => {
            tracing::debug!("the operator page cannot list sessions: {e}");
            return json!({"store": true, "error": "the state store did not answer", "rows": []});
        }
    };
    let rows = crate::api::session_rows(shared, &page.sessions, None);
    json!({"store": true, "rows": rows, "more": page.next.is_some()})
}

/// Every local skill with the state of its SKILL.md, and each skill that
/// did not load with why.
fn skills(shared: &Shared) -> Vec<Value> {
    let places = shared.host.places();
    // Shown as `extpool list sources` shows paths: `./…` or `~/…`.
    let show = |p: &std::path::Path| {
        extpool_host::config::diagnostics::display_path(
            p,
            Some(&places.cwd),
            places.home.as_deref(),
        )
    };
    let manager = shared.host.skills();
    let diagnostics = manager.diagnostics();
    let of = |path: &std::path::Path| -> Vec<Value> {
        diagnostics
            .iter()
            .filter(|d| d.path == path || d.path.parent() == Some(path))
            .map(|d| json!({"severity": d.severity, "line": d.line, "message": d.message}))
            .collect()
    };
    let skills = manager.local_skills();
    let mut rows: Vec<Value> = skills
        .iter()
        .map(|skill| {
            let notes = of(&skill.skill_md);
            json!({
                "name": skill.name(),
                "root": show(&skill.root),
                "path": show(&skill.skill_md),
                "status": if notes.is_empty() { "valid" } else { "warnings" },
                "diagnostics": notes,
            })
        })
        .collect();
    // What no loaded skill accounts for: a skill skipped for its errors.
    for d in &diagnostics {
        let loaded = skills
            .iter()
            .any(|s| d.path == s.skill_md || d.path.parent() == Some(s.skill_md.as_path()));
        if !loaded {
            rows.push(json!({
                "name": d.path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()),
                "root": d.path.parent().and_then(|p| p.parent()).map(show),
                "path": show(&d.path),
                "status": d.severity,
                "diagnostics": [{"severity": d.severity, "line": d.line, "message": d.message}],
            }));
        }
    }
    rows
}

/// Every plugin found (extpool's own and the hosts'), enabled or not,
/// with how many skills, commands, servers, subagents and hooks it has
/// and what was found wrong with it.
fn plugins(shared: &Shared) -> Vec<Value> {
    shared
        .host
        .plugins()
        .into_iter()
        .map(|p| {
            json!({
                "name": p.name,
                "host": p.host,
                "enabled": p.enabled,
                "loaded": p.loaded,
                "version": p.version,
                "skills": p.skills.len(),
                "commands": p.commands.len(),
                "servers": p.servers,
                "agents": p.agents.len(),
                "hooks": p.hooks.len(),
                "diagnostics": p.diagnostics,
            })
        })
        .collect()
}

/// The tools a client of `/mcp` is listed, with descriptions and schemas
/// (what the page searches and the playground calls), and the revision
/// they are of.
pub(crate) fn tools(shared: &std::sync::Arc<Shared>) -> Value {
    let revision = shared.host.catalog().current().number();
    let listed = crate::handler::GatewayHandler::new(shared.clone()).listed_tools();
    let tools: Vec<Value> = listed
        .tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "input_schema": t.input_schema,
            })
        })
        .collect();
    json!({"revision": revision, "tools": tools})
}
