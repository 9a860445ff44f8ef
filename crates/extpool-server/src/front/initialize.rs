//! Sessions begun and resumed: an `initialize` is answered here
//! ([`initialize`]) — the endpoint's handler made and initialized in the
//! HTTP task, the answer `application/json` with the new `Mcp-Session-Id`
//! (random, 128 bits) — and the client's `initialize` parameters are kept
//! in the state store when there is one ([`crate::held::resume`]'s record), so
//! any replica resumes the session ([`resume`]) by initializing a handler
//! from them again.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use extpool_host::core::Principal;
use futures::future::BoxFuture;
use rmcp::model::{InitializeRequestParams, RequestId, ServerJsonRpcMessage, ServerResult};

use super::session::Session;
use crate::client_peer::{ClientPeer, Outbound};
use crate::handler::GatewayHandler;
use crate::held::live::Key;
use crate::shared::Shared;

/// The session header.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// Makes the handler of a new (or resumed) session of one endpoint: the
/// gateway's for `/mcp`, the durable session's for its own endpoint (or
/// the answer that says why there is none).
pub(crate) type MakeHandler =
    Box<dyn FnOnce() -> BoxFuture<'static, Result<GatewayHandler, Response>> + Send>;

/// A new session id: 128 random bits, hex (the spec asks for an id no one
/// can guess).
fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

/// What [`initialize`] made.
pub(crate) struct Made {
    /// The answer, with the session's id.
    pub response: Response,
    /// The session's id.
    pub id: String,
    /// The session.
    pub session: Arc<Session>,
}

/// Initializes `handler` for `principal`'s client, which sent `params`:
/// the session it opened and the `initialize` result. `Err` is the
/// handler's refusal.
async fn open(
    handler: GatewayHandler,
    params: &InitializeRequestParams,
    principal: &Principal,
) -> Result<(Arc<Session>, rmcp::model::InitializeResult), rmcp::ErrorData> {
    // The client's parameters with the version agreed on: what its
    // requests are answered by.
    let mut agreed = params.clone();
    agreed.protocol_version = crate::handler::negotiate(&params.protocol_version)?;
    let outbound = Outbound::new(agreed);
    let result = handler
        .initialize(principal, params, ClientPeer::Own(outbound.clone()))
        .await?;
    Ok((Session::new(handler, Some(outbound)), result))
}

/// Answers `initialize` request `id` (with `params`) without a session on
/// `endpoint` (checked by [`crate::check`], its slot taken by the door)
/// from `principal`: the session made, or the answer when none was.
pub(crate) async fn initialize(
    shared: &Arc<Shared>,
    endpoint: &str,
    make: MakeHandler,
    principal: &Principal,
    (id, params): (RequestId, InitializeRequestParams),
) -> Result<Made, Response> {
    let handler = make().await?;
    let Some(session_id) = new_id() else {
        return Err(super::refusals::rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            Some(&id),
            -32603,
            "the gateway could not draw a session id (no randomness); retry",
        ));
    };
    claim(shared, endpoint, &session_id, principal, &id).await?;
    let (session, result) = match open(handler, &params, principal).await {
        Ok(opened) => opened,
        Err(error) => {
            shared.front.resume.discard(endpoint, &session_id).await;
            let answer = ServerJsonRpcMessage::error(error, Some(id));
            return Err(super::running::json(&answer));
        }
    };
    shared
        .front
        .resume
        .keep(endpoint, &session_id, &params)
        .await;
    let answer = ServerJsonRpcMessage::response(ServerResult::InitializeResult(result), id);
    let mut bytes = serde_json::to_vec(&answer).unwrap_or_default();
    if let Some(declared) = session.declare_tasks(&bytes) {
        bytes = declared;
    }
    let mut response = json_bytes(bytes.into());
    if let Ok(value) = HeaderValue::from_str(&session_id) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    Ok(Made {
        response,
        id: session_id,
        session,
    })
}

/// Claims session `session_id` of `endpoint` in the store for
/// `principal` (an owned caller's), counted against
/// `sessions_per_principal` on every replica sharing the store (the
/// sessions seen within a replica's lease: each replica marks those it
/// holds at every heartbeat). `Err` is the refusal of request `id`: HTTP
/// 429, as the replica's own count refuses.
async fn claim(
    shared: &Shared,
    endpoint: &str,
    session_id: &str,
    principal: &Principal,
    id: &RequestId,
) -> Result<(), Response> {
    let Some(owner) = crate::identity::owner_of(principal) else {
        return Ok(());
    };
    let options = &shared.options;
    let lease = crate::sessions::replica::lease(options.replica_heartbeat);
    let max = options.sessions_per_principal;
    let Err(_held) = shared
        .front
        .resume
        .claim((endpoint, session_id), &owner, max, lease)
        .await
    else {
        return Ok(());
    };
    shared
        .ops
        .metrics
        .refused(crate::metrics::Refusal::Sessions);
    let full = crate::held::live::Full {
        max,
        frees_in: None,
        idle: options.session_idle_timeout,
        own: true,
    };
    let mut answer = super::refusals::rpc_error(
        StatusCode::TOO_MANY_REQUESTS,
        Some(id),
        -32000,
        &full.message(),
    );
    if let Ok(value) = HeaderValue::from_str(&full.retry_after().to_string()) {
        answer.headers_mut().insert(header::RETRY_AFTER, value);
    }
    Err(answer)
}

/// Resumes session `key`, which another replica (or this one, before its
/// slot was freed) made, from the store's record: a handler made by
/// `make` is initialized with the client's `initialize` parameters again,
/// for `principal` (the session's owner or an operator, checked). `Err`
/// is the answer: the session is unknown (404) when the record is gone or
/// unreadable.
pub(crate) async fn resume(
    shared: &Arc<Shared>,
    key: &Key,
    make: MakeHandler,
    principal: &Principal,
) -> Result<Arc<Session>, Response> {
    let Some(params) = shared.front.resume.load(&key.0, &key.1).await else {
        return Err(super::session_not_found());
    };
    let handler = make().await?;
    match open(handler, &params, principal).await {
        Ok((session, _)) => {
            tracing::debug!(endpoint = %key.0, "MCP session resumed from the store");
            Ok(session)
        }
        Err(error) => {
            tracing::warn!(endpoint = %key.0, "an MCP session could not be resumed: {}", error.message);
            Err(super::session_not_found())
        }
    }
}

fn json_bytes(bytes: Bytes) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from(bytes),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_random_and_distinct() {
        let a = new_id().expect("id");
        let b = new_id().expect("id");
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
