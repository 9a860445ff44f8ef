//! 2026-07-28 messages, which have no session, answered in the HTTP task
//! that received them: the transport's checks first ([`super::refusals`]:
//! media types, the version header, `_meta` against it, then SEP-2243's
//! standard headers against the body, [`crate::front::standard_headers`]); a
//! request is then answered by one handler made for it, as a session's
//! are ([`Session::answer`]): `application/json` when nothing precedes
//! the result, else an SSE stream, which cannot be resumed (there is no
//! session): its call is cancelled when its client goes away. The
//! answer's HTTP status is the era's for its error ([`status_of`]: 400,
//! 404), known before anything is sent. `subscriptions/listen` is
//! answered with a stream that stays open ([`super::listen`]); a
//! notification is taken (202); an answer is refused (the gateway asks a
//! 2026-07-28 client nothing outside a call's answer).

use crate::handler::caller::Caller;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, GetMeta, JsonRpcRequest, ProtocolVersion,
    ServerJsonRpcMessage,
};

use super::initialize::MakeHandler;
use super::refusals;
use super::session::Session;
use super::standard_headers::Said;

/// Serves a 2026-07-28 `message` without a session (its body `bytes` read
/// and checked, `parts` its HTTP request's), from `principal`.
pub(crate) async fn serve(
    parts: axum::http::request::Parts,
    bytes: &[u8],
    message: ClientJsonRpcMessage,
    make: MakeHandler,
    caller: Caller,
) -> Response {
    if let Some(refused) = refusals::post_media(&parts.headers) {
        return refused;
    }
    let per_request = matches!(&message, ClientJsonRpcMessage::Request(r)
        if r.request.get_meta().protocol_version().is_some());
    if let Err(refused) = refusals::version_header(&parts.headers, per_request) {
        return *refused;
    }
    let (id, request) = match message {
        ClientJsonRpcMessage::Request(JsonRpcRequest { id, request, .. }) => (id, request),
        ClientJsonRpcMessage::Notification(_) => {
            let refused = Box::pin(crate::front::standard_headers::refusal(
                &parts.headers,
                Said::of_body(bytes),
                None,
                None,
                &caller,
            ))
            .await;
            return refused.unwrap_or_else(|| StatusCode::ACCEPTED.into_response());
        }
        ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_) => {
            return refusals::no_question();
        }
    };
    if let Some(refused) = refusals::meta_against_header(&parts.headers, &id, &request) {
        return refused;
    }
    let handler = match make().await {
        Ok(handler) => handler,
        Err(answer) => return answer,
    };
    let id_value = serde_json::to_value(&id).ok();
    let said = match &request {
        ClientRequest::CallToolRequest(call) => Some(Said::of_call(&call.params)),
        _ => Said::of_body(bytes),
    };
    let refused = crate::front::standard_headers::refusal(
        &parts.headers,
        said,
        id_value.as_ref(),
        Some(&handler),
        &caller,
    )
    .await;
    if let Some(answer) = refused {
        return answer;
    }
    match request {
        ClientRequest::SubscriptionsListenRequest(listen) => {
            let meta = listen
                .extensions
                .get::<rmcp::model::RequestMetaObject>()
                .cloned()
                .unwrap_or_default();
            let meta = &meta;
            match crate::handler::admitted(meta, true) {
                Ok(_) => Box::pin(super::listen::serve(&handler, id, listen)).await,
                Err(error) => {
                    let malformed = malformed(meta);
                    let answer = ServerJsonRpcMessage::error(error, Some(id));
                    let status = status_of(&answer, malformed);
                    super::running::with_status(super::running::json(&answer), status)
                }
            }
        }
        request => {
            Session::of_request(handler)
                .answer(parts, (id, request), caller)
                .await
        }
    }
}

/// Whether a stand-alone request's `_meta` lacks what the 2026-07-28 era
/// requires of it.
pub(super) fn malformed(meta: &rmcp::model::RequestMetaObject) -> bool {
    !meta
        .missing_required_keys(&ProtocolVersion::V_2026_07_28)
        .is_empty()
}

/// The HTTP status of an answer in the 2026-07-28 era: an error says
/// what the request got wrong in the status too (the version, a header,
/// a capability, its `_meta` when `malformed`: 400; no such method: 404).
pub(super) fn status_of(answer: &ServerJsonRpcMessage, malformed: bool) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = answer else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_PARAMS if malformed => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}
