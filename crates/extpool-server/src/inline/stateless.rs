//! 2026-07-28 requests, which have no session, answered in the HTTP task
//! that received them, as a session's are ([`super::dispatch`]): one
//! handler made for the request (it also gives the called tool's schema
//! for the standard headers' check), the request read once, its answer
//! `application/json` when nothing precedes the result, else an SSE
//! stream, which cannot be resumed (there is no session): its call is
//! cancelled when its client goes away. The answer's HTTP status is the
//! era's for its error ([`status_of`]: 400, 404), known before anything
//! is sent.
//!
//! `subscriptions/listen` is answered here too, with a stream that stays
//! open ([`super::subscriptions`]). rmcp's transport still answers what is
//! not plainly such a request — a notification, an answer — and a request
//! whose `_meta` or headers its checks would
//! refuse (no `protocolVersion` or `clientCapabilities` in `_meta`, a
//! version other than 2026-07-28 or than its header's, an `Accept` or
//! `Content-Type` it refuses), so that those answers stay its own.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use extpool_host::core::Principal;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, GetMeta, JsonRpcRequest, ProtocolVersion,
    RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;
use serde_json::Value;

use super::headers::{accepted, json_body};
use super::{InlineSession, dispatch, read};
use crate::gateway::Shared;

/// Serves a 2026-07-28 request or notification without a session (its
/// `bytes` read and checked): its standard headers checked against its
/// body, then answered here when it is one this module answers, else by
/// `serve` (rmcp's service).
pub(crate) async fn serve<F, Fut>(
    shared: &Arc<Shared>,
    request: Request,
    bytes: &Bytes,
    id: Option<&Value>,
    make: crate::front::MakeHandler,
    principal: &Arc<Principal>,
    serve: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let (mut parts, body) = request.into_parts();
    let taken = taken_here(&mut parts, bytes);
    // A request's handler: the one that answers it here, or the one whose
    // tool schemas the header check reads for a request rmcp answers.
    let handler = match id {
        Some(_) => match make().await {
            Ok(handler) => Some(handler),
            Err(answer) if taken.is_some() => return answer,
            Err(_) => None,
        },
        None => None,
    };
    let refused =
        crate::standard_headers::refusal(&parts.headers, bytes, id, handler.as_ref(), principal)
            .await;
    if let Some(answer) = refused {
        return answer;
    }
    match (taken, handler) {
        (Some((id, ClientRequest::SubscriptionsListenRequest(listen))), Some(handler)) => {
            super::subscriptions::serve(&handler, id, listen).await
        }
        (Some(request), Some(handler)) => {
            let session = InlineSession::of_request(handler, shared.stand.peer());
            dispatch(&session, parts, request).await
        }
        _ => serve(Request::from_parts(parts, body)).await,
    }
}

/// The request of a POST this module answers (see the module's
/// documentation), read from `parts` (as the check read it) or `bytes`.
fn taken_here(
    parts: &mut axum::http::request::Parts,
    bytes: &[u8],
) -> Option<(RequestId, ClientRequest)> {
    let version = ProtocolVersion::V_2026_07_28;
    let header = parts
        .headers
        .get(HEADER_MCP_PROTOCOL_VERSION)?
        .to_str()
        .ok()?;
    if header != version.as_str() || accepted(&parts.headers) != (true, true) {
        return None;
    }
    if !json_body(&parts.headers) {
        return None;
    }
    let Ok(ClientJsonRpcMessage::Request(JsonRpcRequest { id, request, .. })) = read(parts, bytes)
    else {
        return None;
    };
    use rmcp::model::ClientRequest as R;
    if matches!(request, R::InitializeRequest(_)) {
        return None;
    }
    let meta = request.get_meta();
    let plain = meta.missing_required_keys(&version).is_empty()
        && meta.protocol_version().as_ref() == Some(&version);
    plain.then_some((id, request))
}

/// The HTTP status of an answer in the 2026-07-28 era: an error says
/// what the request got wrong in the status too (the version, a header,
/// a capability: 400; no such method: 404), as rmcp's transport says it.
pub(super) fn status_of(answer: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = answer else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}
