//! The operator HTTP API under `/v1` (JSON), and each durable session's
//! own MCP endpoint (`/sessions/{id}/mcp`):
//!
//! - `GET /v1` — what this deployment offers (`mcp_servers_on_create`);
//! - `POST /v1/sessions` — create (`{id?, mcp_servers?, auto_grant?}`);
//! - `GET /v1/sessions` — list (`?cursor=`, `?limit=`);
//! - `GET /v1/sessions/{id}` — one session, its grants and server names;
//! - `DELETE /v1/sessions/{id}` — close its servers, forget it;
//! - `POST /v1/sessions/{id}/mcp-refresh` — bodyless refresh;
//! - `GET /v1/sources` — ListMcpSources (cached; never probes upstream);
//!   with `?after=N` (the `updates` of an earlier answer) it answers once
//!   discovery reports a change past it, a watch without polling;
//! - `GET /v1/replicas` — the replicas sharing the store, and which one
//!   answered.
//!
//! Any replica sharing the store answers any of these for any session: a
//! session is opened from the store on the replica a request reaches.
//!
//! Session configs are never shown back (they may hold `${VAR}`
//! references to secrets); errors are `{"error": message}`.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tower::ServiceExt;

use crate::gateway::Shared;
use crate::handler::GatewayHandler;
use crate::sessions::{CreateRequest, SessionError, Sessions};
use crate::source_tools::sources_json;

/// What the API routes need.
#[derive(Clone)]
pub(crate) struct Api {
    pub shared: Arc<Shared>,
    pub config: StreamableHttpServerConfig,
}

fn error(status: u16, message: impl std::fmt::Display) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(json!({"error": message.to_string()}))).into_response()
}

fn session_error(e: &SessionError) -> Response {
    let status = e.status();
    if status >= 500 {
        tracing::warn!("session operation failed: {e}");
        return error(
            status,
            "the operation failed; see GET /v1/sources and retry",
        );
    }
    error(status, e)
}

fn no_store() -> Response {
    error(
        404,
        "this gateway keeps no sessions (it runs without a state store)",
    )
}

async fn root(State(api): State<Api>) -> Response {
    let sessions = api.shared.sessions.as_ref();
    Json(json!({
        "sessions": sessions.is_some(),
        "mcp_servers_on_create": sessions.is_some_and(Sessions::accepts_servers),
        "replica": api.shared.replica,
    }))
    .into_response()
}

/// `GET /v1/replicas`: the replicas sharing this gateway's store, as their
/// heartbeats show them, and which one answered.
async fn replicas(State(api): State<Api>) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    match sessions.store().replicas().await {
        Ok(replicas) => Json(json!({
            "replica": api.shared.replica,
            "replicas": replicas,
        }))
        .into_response(),
        Err(e) => session_error(&e.into()),
    }
}

async fn create(State(api): State<Api>, body: Option<Json<CreateRequest>>) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    let request = body.map(|Json(b)| b).unwrap_or_default();
    match sessions.create(&api.shared, request).await {
        Ok((session, _)) => {
            let id = session.summary.id.as_str().to_owned();
            (
                StatusCode::CREATED,
                Json(json!({
                    "session": session.summary,
                    "granted": session.authority.granted,
                    "servers": session.servers.keys().collect::<Vec<_>>(),
                    "mcp": format!("/sessions/{id}/mcp"),
                })),
            )
                .into_response()
        }
        Err(e) => session_error(&e),
    }
}

#[derive(serde::Deserialize)]
struct ListQuery {
    cursor: Option<String>,
    limit: Option<usize>,
}

async fn list(State(api): State<Api>, Query(q): Query<ListQuery>) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    let cursor = q.cursor.map(extpool_state::SessionCursor);
    match sessions
        .store()
        .list(cursor.as_ref(), q.limit.unwrap_or(100))
        .await
    {
        Ok(page) => Json(page).into_response(),
        Err(e) => session_error(&e.into()),
    }
}

async fn get_one(State(api): State<Api>, Path(id): Path<String>) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    let id = match extpool_state::SessionId::new(id) {
        Ok(id) => id,
        Err(e) => return session_error(&e.into()),
    };
    let session = match sessions.store().get(&id).await {
        Ok(session) => session,
        Err(e) => return session_error(&e.into()),
    };
    // Which replicas hold it open (connected to its per-session servers).
    let holders = match sessions.store().holders(&id).await {
        Ok(holders) => holders,
        Err(e) => return session_error(&e.into()),
    };
    Json(json!({
        "session": session.summary,
        "granted": session.authority.granted,
        "auto_grant": session.authority.auto_grant,
        "servers": session.servers.keys().collect::<Vec<_>>(),
        "open_on": holders,
        "mcp": format!("/sessions/{}/mcp", id.as_str()),
    }))
    .into_response()
}

async fn delete(State(api): State<Api>, Path(id): Path<String>) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    match sessions.delete(&api.shared, &id).await {
        Ok(servers) => Json(json!({"deleted": id, "closed_servers": servers})).into_response(),
        Err(e) => session_error(&e),
    }
}

async fn refresh(State(api): State<Api>, Path(id): Path<String>) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    match sessions.refresh(&api.shared, &id).await {
        Ok(answer) => Json(answer).into_response(),
        Err(e) => session_error(&e),
    }
}

/// Longest wait of `GET /v1/sources?after=N`, and its default.
const SOURCES_WAIT_MAX_MS: u64 = 60_000;

#[derive(serde::Deserialize)]
struct SourcesQuery {
    /// The `updates` of an earlier answer: wait for a change past it.
    after: Option<u64>,
    /// How long to wait at most (capped at [`SOURCES_WAIT_MAX_MS`]).
    wait_ms: Option<u64>,
}

async fn sources(State(api): State<Api>, Query(q): Query<SourcesQuery>) -> Response {
    let Some(after) = q.after else {
        return Json(sources_json(&api.shared)).into_response();
    };
    let wait = q
        .wait_ms
        .unwrap_or(SOURCES_WAIT_MAX_MS)
        .min(SOURCES_WAIT_MAX_MS);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(wait);
    let mut updates = api.shared.host.discovery_updates();
    let waited = tokio::time::timeout_at(deadline, updates.wait_for(|n| *n > after))
        .await
        .map(|changed| changed.is_ok());
    let changed = match waited {
        Ok(true) => true,
        // No discovery here: nothing will change; wait as asked.
        Ok(false) => {
            tokio::time::sleep_until(deadline).await;
            false
        }
        Err(_) => false,
    };
    let mut answer = sources_json(&api.shared);
    answer["changed"] = json!(changed);
    Json(answer).into_response()
}

/// `/sessions/{id}/mcp`: the session's own MCP endpoint (opened from the
/// store on first use).
async fn session_mcp(State(api): State<Api>, Path(id): Path<String>, request: Request) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    let existing = sessions.services.lock().get(&id).cloned();
    let service = match existing {
        Some(service) => service,
        None => {
            let open = match sessions.get(&api.shared, &id).await {
                Ok(open) => open,
                Err(e) => return session_error(&e),
            };
            let shared = api.shared.clone();
            let service = StreamableHttpService::new(
                move || Ok(GatewayHandler::for_session(shared.clone(), open.clone())),
                api.shared.resume.manager(&id),
                api.shared.resume.config(api.config.clone(), &id),
            );
            sessions
                .services
                .lock()
                .entry(id.clone())
                .or_insert(service)
                .clone()
        }
    };
    let max = api.shared.options.max_body_bytes;
    crate::event_ids::through(&api.shared.event_tag, request, max, |request| async move {
        match service.oneshot(request.map(Body::new)).await {
            Ok(response) => response.into_response(),
            Err(never) => match never {},
        }
    })
    .await
}

/// The `/v1` routes and the session endpoints.
pub(crate) fn routes(api: Api) -> Router {
    Router::new()
        .route("/v1", get(root))
        .route("/v1/sessions", post(create).get(list))
        .route("/v1/sessions/{id}", get(get_one).delete(delete))
        .route("/v1/sessions/{id}/mcp-refresh", post(refresh))
        .route("/v1/sources", get(sources))
        .route("/v1/replicas", get(replicas))
        .route(
            "/sessions/{id}/mcp",
            get(session_mcp).post(session_mcp).delete(session_mcp),
        )
        .with_state(api)
}
