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
//!   answered;
//! - `POST /v1/sources/{name}/restart` — an operator's restart of one
//!   server (its connection closed and made again; the others untouched);
//! - `GET /v1/sources/{name}/logs` — an operator's read of one server's
//!   log (its stderr and extpool's lines about it); `?follow=true` streams
//!   them as NDJSON, the kept ones first, until the client goes.
//!
//! Any replica sharing the store answers any of these for any session: a
//! session is opened from the store on the replica a request reaches.
//!
//! A session is its creator's ([`crate::identity`]): `GET /v1/sessions`
//! lists the caller's own (an operator's: every one), and another
//! principal's id answers 404 as an id nobody made does. Ids are each
//! caller's own namespace (module `sessions::ids`): an `{id}` in a path
//! is the caller's id or a session's whole id, and answers show a caller
//! its own ids as it chose them.
//!
//! Session configs are never shown back (they may hold `${VAR}`
//! references to secrets); errors are `{"error": message}`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Extension, Path, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use serde_json::json;

use extpool_host::core::Principal;

use crate::handler::GatewayHandler;
use crate::handler::source_tools::sources_json;
use crate::sessions::ids::shown;
use crate::sessions::{CreateRequest, SessionError, Sessions};
use crate::shared::Shared;

/// What the API routes need.
#[derive(Clone)]
pub(crate) struct Api {
    pub shared: Arc<Shared>,
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
        "replica": api.shared.ops.replica,
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
            "replica": api.shared.ops.replica,
            "replicas": replicas,
        }))
        .into_response(),
        Err(e) => session_error(&e.into()),
    }
}

/// The body of `POST /v1/sessions`: none, or a JSON object of
/// [`CreateRequest`]'s fields; anything else is refused naming what is
/// wrong.
fn create_request(body: &[u8]) -> Result<CreateRequest, Box<Response>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(CreateRequest::default());
    }
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| Box::new(error(400, format!("the body is not JSON: {e}"))))?;
    if !value.is_object() {
        return Err(Box::new(error(
            400,
            "the body is a JSON object ({\"id\"?, \"mcp_servers\"?, \"auto_grant\"?}), or empty",
        )));
    }
    serde_json::from_value(value).map_err(|e| Box::new(error(400, format!("the body: {e}"))))
}

async fn create(
    State(api): State<Api>,
    Extension(principal): Extension<Arc<Principal>>,
    body: axum::body::Bytes,
) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    let request = match create_request(&body) {
        Ok(request) => request,
        Err(answer) => return *answer,
    };
    match sessions.create(&api.shared, request, &principal).await {
        Ok(crate::sessions::Created {
            session,
            open,
            not_granted,
        }) => {
            api.shared.ops.page.touch();
            let id = shown(&session.summary.id, Some(&principal));
            (
                StatusCode::CREATED,
                Json(json!({
                    "session": summary(&session.summary, Some(&principal)),
                    "granted": session.authority.granted,
                    "servers": session.servers.keys().collect::<Vec<_>>(),
                    "server_status": open.server_status(),
                    "not_granted": not_granted,
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

/// A query string that does not read as the route's parameters, as the
/// API's JSON error naming what is wrong.
fn bad_query(rejection: &axum::extract::rejection::QueryRejection) -> Response {
    error(400, format!("the query string: {}", rejection.body_text()))
}

async fn list(
    State(api): State<Api>,
    Extension(principal): Extension<Arc<Principal>>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match query {
        Ok(Query(q)) => q,
        Err(rejection) => return bad_query(&rejection),
    };
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    let cursor = q.cursor.map(extpool_state::SessionCursor);
    // An operator sees every session; anyone else their own.
    let owner = (!principal.operator).then(|| principal.owner());
    let page = sessions
        .store()
        .list_owned(owner.as_deref(), cursor.as_ref(), q.limit.unwrap_or(100))
        .await;
    answered(page.map_err(SessionError::from).map(|page| {
        json!({
            "sessions": session_rows(&api.shared, &page.sessions, Some(&principal)),
            "next": page.next,
        })
    }))
}

/// A stored summary as `principal` is shown it (`None`: the operator
/// page): its id as [`shown`] names it, and its owner named as every log
/// line, audit record and metric names a principal
/// ([`Principal::label`]: `api-key:ci`, `alice@https://idp.example`).
fn summary(
    summary: &extpool_state::SessionSummary,
    principal: Option<&Principal>,
) -> serde_json::Value {
    let mut row = json!(summary);
    row["id"] = json!(shown(&summary.id, principal));
    if let Some(owner) = &summary.owner {
        row["owner"] = json!(Principal::label_of_owner(owner));
    }
    row
}

/// Sessions as `GET /v1/sessions` and the operator page list them: each
/// stored summary as `principal` is shown it (`None`: the operator page)
/// with what the replica answering knows of it — whether it is open here
/// (`open_here`) and its requests in flight here (`in_flight`).
pub(crate) fn session_rows(
    shared: &crate::shared::Shared,
    sessions: &[extpool_state::SessionSummary],
    principal: Option<&Principal>,
) -> Vec<serde_json::Value> {
    let open = shared.sessions.as_ref();
    sessions
        .iter()
        .map(|s| {
            let id = s.id.as_str();
            let mut row = summary(s, principal);
            row["open_here"] = json!(open.is_some_and(|o| o.open_here(id).is_some()));
            row["in_flight"] = json!(shared.front.live.in_flight(id));
            row
        })
        .collect()
}

async fn get_one(
    State(api): State<Api>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(id): Path<String>,
) -> Response {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    let session = match sessions.stored_for(&id, &principal).await {
        Ok(session) => session,
        Err(e) => return session_error(&e),
    };
    let id = session.summary.id.clone();
    // Which replicas hold it open (connected to its per-session servers).
    let holders = match sessions.store().holders(&id).await {
        Ok(holders) => holders,
        Err(e) => return session_error(&e.into()),
    };
    // Its own servers' state, where this replica has it open.
    let status = sessions
        .open_here(id.as_str())
        .map(|open| open.server_status());
    Json(json!({
        "session": summary(&session.summary, Some(&principal)),
        "granted": session.authority.granted,
        "auto_grant": session.authority.auto_grant,
        "servers": session.servers.keys().collect::<Vec<_>>(),
        "server_status": status,
        "open_on": holders,
        "mcp": format!("/sessions/{}/mcp", shown(&id, Some(&principal))),
    }))
    .into_response()
}

async fn delete(
    State(api): State<Api>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(id): Path<String>,
) -> Response {
    let answer = match api.shared.sessions.as_ref() {
        Some(sessions) => sessions.delete(&api.shared, &id, &principal).await,
        None => return no_store(),
    };
    api.shared.ops.page.touch();
    answered(answer.map(|servers| json!({"deleted": id, "closed_servers": servers})))
}

async fn refresh(
    State(api): State<Api>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(id): Path<String>,
) -> Response {
    let answer = match api.shared.sessions.as_ref() {
        Some(sessions) => sessions.refresh(&api.shared, &id, &principal).await,
        None => return no_store(),
    };
    answered(answer.map(|mut answer| {
        if let Ok(whole) = extpool_state::SessionId::new(answer.session.as_str()) {
            answer.session = shown(&whole, Some(&principal));
        }
        answer
    }))
}

/// A session operation's answer as JSON, or its error's.
fn answered<T: serde::Serialize>(answer: Result<T, SessionError>) -> Response {
    match answer {
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

async fn sources(
    State(api): State<Api>,
    query: Result<Query<SourcesQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match query {
        Ok(Query(q)) => q,
        Err(rejection) => return bad_query(&rejection),
    };
    let Some(after) = q.after else {
        return Json(sources_json(&api.shared)).into_response();
    };
    let wait = q
        .wait_ms
        .unwrap_or(SOURCES_WAIT_MAX_MS)
        .min(SOURCES_WAIT_MAX_MS);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(wait);
    let mut updates = api.shared.host.discovery_updates();
    // A shutdown answers at once: no change will come from this replica.
    let change = async {
        tokio::select! {
            changed = updates.wait_for(|n| *n > after) => changed.is_ok(),
            () = api.shared.front.draining.cancelled() => false,
        }
    };
    let waited = tokio::time::timeout_at(deadline, change).await;
    let changed = match waited {
        Ok(true) => true,
        // No discovery here: nothing will change; wait as asked.
        Ok(false) => {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = api.shared.front.draining.cancelled() => {}
            }
            false
        }
        Err(_) => false,
    };
    let mut answer = sources_json(&api.shared);
    answer["changed"] = json!(changed);
    Json(answer).into_response()
}

/// Refuses a caller that is not an operator (`None`: an operator).
pub(crate) fn operator_only(principal: &Principal, what: &str) -> Option<Response> {
    (!principal.operator).then(|| {
        error(
            403,
            format!("{what} is for an operator (the gateway's token or an operator API key)"),
        )
    })
}

/// `POST /v1/sources/{name}/restart`: server `name`'s connection closed
/// and made again by the host; its connection afterwards.
async fn restart(
    State(api): State<Api>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(name): Path<String>,
) -> Response {
    if let Some(refused) = operator_only(&principal, "restarting a server") {
        return refused;
    }
    match api.shared.host.restart_server(&name).await {
        Ok(connection) => {
            api.shared.ops.page.touch();
            Json(json!({"restarted": connection.name, "connection": connection})).into_response()
        }
        Err(e @ extpool_host::HostError::UnknownServer { .. }) => error(404, e),
        Err(e) => {
            tracing::warn!("{e}");
            error(502, e)
        }
    }
}

#[derive(serde::Deserialize)]
struct LogsQuery {
    /// Stream new lines after the kept ones.
    follow: Option<bool>,
}

/// A log line as one NDJSON line.
fn ndjson(line: &impl serde::Serialize) -> axum::body::Bytes {
    let mut text = serde_json::to_vec(line).unwrap_or_default();
    text.push(b'\n');
    text.into()
}

/// `GET /v1/sources/{name}/logs`: server `name`'s log, or (`follow`) the
/// log and every new line as NDJSON until the client goes or the gateway
/// drains.
async fn logs(
    State(api): State<Api>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(name): Path<String>,
    query: Result<Query<LogsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    use extpool_host::core::name::same_server_name;
    let q = match query {
        Ok(Query(q)) => q,
        Err(rejection) => return bad_query(&rejection),
    };
    if let Some(refused) = operator_only(&principal, "reading a server's log") {
        return refused;
    }
    let host = &api.shared.host;
    let (lines, follow) = host.server_logs().follow(&name);
    let known = host
        .servers()
        .into_iter()
        .find(|s| same_server_name(&s.name, &name))
        .map(|s| s.name)
        .or_else(|| lines.as_ref()?.first().map(|l| l.server.clone()));
    let Some(server) = known else {
        return error(404, format!("no MCP server named {name:?} here"));
    };
    let lines = lines.unwrap_or_default();
    if q.follow != Some(true) {
        return Json(json!({"server": server, "lines": lines})).into_response();
    }
    let draining = api.shared.front.draining.clone();
    let kept = futures::stream::iter(
        lines
            .into_iter()
            .map(|l| Ok::<_, std::convert::Infallible>(ndjson(&l))),
    );
    let new = futures::stream::unfold(
        (follow, draining, server),
        |(mut follow, draining, server)| async move {
            loop {
                let got = tokio::select! {
                    () = draining.cancelled() => return None,
                    got = follow.recv() => got,
                };
                let bytes = match got {
                    Ok(line) if same_server_name(&line.server, &server) => ndjson(&line),
                    Ok(_) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => ndjson(&json!({
                        "server": server, "kind": "extpool",
                        "line": format!("{n} lines of the servers' logs missed (this reader fell behind)"),
                    })),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                };
                return Some((Ok(bytes), (follow, draining, server)));
            }
        },
    );
    let body = axum::body::Body::from_stream(futures::StreamExt::chain(kept, new));
    (
        [(axum::http::header::CONTENT_TYPE, "application/x-ndjson")],
        body,
    )
        .into_response()
}

/// `/sessions/{id}/mcp`: the session's own MCP endpoint (opened from the
/// store on first use), served by [`crate::front`].
async fn session_mcp(State(api): State<Api>, Path(id): Path<String>, request: Request) -> Response {
    let shared = api.shared.clone();
    let principal = crate::identity::of(&request);
    // The endpoint is the session's whole id, however the caller named it.
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return no_store();
    };
    let id = match sessions.resolve(&id, &principal).await {
        Ok(whole) => whole.as_str().to_owned(),
        Err(e) => return session_error(&e),
    };
    let endpoint = id.clone();
    let make: crate::front::MakeHandler = {
        let (api, id, principal) = (api.clone(), id.clone(), principal.clone());
        Box::new(move || {
            Box::pin(async move {
                let open = session_open(&api, &id, &principal).await?;
                Ok(GatewayHandler::for_session(api.shared.clone(), open))
            })
        })
    };
    crate::front::serve(&shared, &endpoint, request, make).await
}

/// Durable session `id`, opened from the store on first use; only for a
/// principal that may act on it.
async fn session_open(
    api: &Api,
    id: &str,
    principal: &Principal,
) -> Result<Arc<crate::sessions::OpenSession>, Response> {
    let Some(sessions) = api.shared.sessions.as_ref() else {
        return Err(no_store());
    };
    sessions
        .get(&api.shared, id, principal)
        .await
        .map_err(|e| session_error(&e))
}

/// The `/v1` routes and the session endpoints.
pub(crate) fn routes(api: &Api) -> Vec<(&'static str, MethodRouter)> {
    vec![
        ("/v1", get(root).with_state(api.clone())),
        (
            "/v1/sessions",
            post(create).get(list).with_state(api.clone()),
        ),
        (
            "/v1/sessions/{id}",
            get(get_one).delete(delete).with_state(api.clone()),
        ),
        (
            "/v1/sessions/{id}/mcp-refresh",
            post(refresh).with_state(api.clone()),
        ),
        ("/v1/sources", get(sources).with_state(api.clone())),
        ("/v1/replicas", get(replicas).with_state(api.clone())),
        (
            "/v1/sources/{name}/restart",
            post(restart).with_state(api.clone()),
        ),
        ("/v1/sources/{name}/logs", get(logs).with_state(api.clone())),
        (
            "/sessions/{id}/mcp",
            get(session_mcp)
                .post(session_mcp)
                .delete(session_mcp)
                .with_state(api.clone()),
        ),
    ]
}
