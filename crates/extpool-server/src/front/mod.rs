//! The MCP endpoints of the HTTP front end (`/mcp`, and each durable
//! session's `/sessions/{id}/mcp`): extpool's own streamable HTTP, in
//! both protocol eras, every request answered by the project's own code
//! in the HTTP task that received it. The door ([`serve`]) checks and
//! keeps, for every request:
//!
//! - the body, read once within the size limit and the body timeout, and
//!   the message ([`crate::check`], as over stdio): JSON (else `-32700`),
//!   one JSON-RPC message, not a batch (else `-32600`), and the params of
//!   a method MCP defines of the shape it defines (else `-32602`, naming
//!   the method and what is wrong) — all HTTP 400 with a JSON-RPC error,
//!   so no client waits for an answer ([`read`]);
//! - the transport's rules of streamable HTTP ([`refusals`]): media types,
//!   the version header, `_meta` against it, what needs a session;
//! - the session's slot and activity ([`crate::held::live`],
//!   [`in_session`]): a new or resumed session takes a slot (at the
//!   limit: HTTP 503 saying when one frees),
//!   a request id in flight on the session is refused at once, and the
//!   session is busy while a request or stream is open;
//! - a session not held here is resumed only if the store keeps its
//!   record ([`initialize::resume`]): one nobody issued (or ended, or
//!   without a store) is unknown, HTTP 404, whatever the slots; the
//!   request that resumes it is admitted with its id before the session
//!   is resumed, so the id rule holds for every request of a resumed
//!   session, and one session is resumed by one request at a time (the
//!   others wait for it);
//! - a session belongs to the principal whose `initialize` made it
//!   ([`crate::identity`]): another principal's request with its id is
//!   answered as an unknown session is (HTTP 404), here and on any replica
//!   that resumes it;
//! - SSE event ids tagged with this replica ([`crate::front::event_ids`]);
//! - the shutdown ([`crate::shutdown`]): once it began, a new request or
//!   `GET` stream is refused with HTTP 503, streams that never end by
//!   themselves end, and a request still running when requests are
//!   cancelled is answered with the shutdown error.
//!
//! Then it is answered: an `initialize` begins a session
//! ([`opening`], [`initialize`]); a session's request is answered by its [`Session`]
//! (JSON, or a stream when something must come first), its
//! notifications taken (202; `notifications/cancelled` cancels the call
//! it names), its answers to what the gateway asked taken, its `GET`
//! stream carries what the gateway sends the client outside a call's
//! answer (a stream of a call resumed by its `Last-Event-ID`), its
//! `DELETE` ends it and its record (204); a 2026-07-28 message, which has
//! no session, is answered as [`stateless`] says.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcRequest};
use serde_json::Value;

use crate::check::Message;
use crate::handler::caller::Caller;
use crate::methods::Era;
use crate::shared::Shared;
use crate::shutdown::Stream;

pub(crate) mod event_ids;
mod in_session;
mod initialize;
mod listen;
mod opening;
mod read;
pub(crate) mod reaper;
mod refusals;
mod running;
mod session;
pub(crate) mod standard_headers;
mod stateless;

pub(crate) use crate::held::replay::event_stream;
pub(crate) use initialize::MakeHandler;
pub(crate) use session::Session;

use in_session::{Admitted, check_owner, in_session};
use initialize::SESSION_HEADER;
use opening::{Opening, initialize};
pub(crate) use read::rpc_error;
use read::{Read, era_of, read};

/// Serves `request` on MCP endpoint `endpoint` (`""` for `/mcp`), whose
/// sessions' handlers `make` makes, with every check of this module.
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    endpoint: &str,
    request: Request,
    make: MakeHandler,
) -> Response {
    let _arriving = shared.front.live.arriving(endpoint);
    let principal = crate::identity::of(&request);
    let (mut parts, body) = request.into_parts();
    let resumed = crate::front::event_ids::resumed_request(&shared.front.event_tag, &parts);
    if let Some(answer) =
        crate::front::event_ids::resume_header(&shared.front.event_tag, &mut parts)
    {
        return answer;
    }
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|id| (endpoint.to_owned(), id.to_owned()));
    let read = match read(shared, &parts, body).await {
        Ok(read) => read,
        Err(answer) => return *answer,
    };
    let message = &read.message;
    let stream = stream_of(&parts.method, message, resumed);
    // A resumed request stream carries an answer still owed: not new work.
    let new_work = matches!(stream, Some(Stream::Open)) || message.id.is_some();
    if new_work && shared.front.draining.is_cancelled() {
        return crate::shutdown::refused(message.id.as_ref());
    }
    let span = crate::trace::request_span(
        message.traced.as_deref(),
        message.id.as_ref(),
        &parts.headers,
        session.as_ref().map(|(_, id)| id.as_str()),
    );
    if !span.is_disabled() {
        parts
            .extensions
            .insert(crate::trace::RequestSpan(span.clone()));
    }
    let tag_id = message.id.as_ref().map(|id| hex::encode(id.to_string()));
    let grace = shared.options.shutdown_timeout;
    let id = message.id.clone();
    let work = async {
        match session {
            Some(key) => match check_owner(shared, &key, &principal).await {
                Ok(found) => {
                    let admitted = Admitted { key, found };
                    in_session(shared, admitted, parts, read, make, &principal).await
                }
                Err(answer) => answer,
            },
            None => sessionless(shared, endpoint, parts, read, make, &principal).await,
        }
    };
    let stopped = || match &id {
        Some(id) => crate::shutdown::cancelled(Some(id), grace),
        None => crate::shutdown::refused(None),
    };
    let work = tracing::Instrument::instrument(work, span.clone());
    let response = tokio::select! {
        // Cancelled before anything was sent: the whole answer is the error.
        biased;
        () = shared.front.stop.cancelled() => stopped(),
        response = work => response,
    };
    crate::trace::ended(&span, response.status());
    let response = match stream {
        Some(stream) => crate::shutdown::follow(
            response,
            stream,
            &shared.front.draining,
            &shared.front.stop,
            grace,
        ),
        None => response,
    };
    crate::front::event_ids::tag(&shared.front.event_tag, response, tag_id.as_deref())
}

/// A request without a session: an `initialize` begins one; a 2026-07-28
/// message is answered as [`stateless`] says; anything else needs a
/// session, or is not allowed ([`refusals`]).
async fn sessionless(
    shared: &Arc<Shared>,
    endpoint: &str,
    parts: axum::http::request::Parts,
    read: Read,
    make: MakeHandler,
    principal: &Arc<extpool_host::core::Principal>,
) -> Response {
    if parts.method == Method::GET || parts.method == Method::DELETE {
        return refusals::sessionless(&parts.method, &parts.headers);
    }
    if parts.method != Method::POST {
        return refusals::method_not_allowed("GET, POST, DELETE");
    }
    let Read {
        message,
        bytes,
        parsed,
    } = read;
    let Some(parsed) = parsed else {
        return refusals::session_required();
    };
    if let ClientJsonRpcMessage::Request(JsonRpcRequest {
        id,
        request: ClientRequest::InitializeRequest(init),
        ..
    }) = parsed
    {
        let asked = init.params.protocol_version.as_str().to_owned();
        if let Some(refused) = refusals::initialize(&parts.headers, &asked, &id) {
            return refused;
        }
        let owner = crate::identity::owner_of(principal);
        let opening = Opening {
            endpoint,
            message: &message,
            owner,
            principal,
        };
        // Boxed: an `initialize` is rare beside the calls that share this
        // future, and its state is large (the futures a call takes are moved).
        return Box::pin(initialize(shared, opening, make, (id, init.params))).await;
    }
    let caller = Caller::of(shared, principal.clone()).presenting(&parts.extensions);
    match era_of(&parts.headers) {
        Era::Stateless => stateless::serve(parts, &bytes, parsed, make, caller).await,
        Era::Session => session_era(parts, parsed, make, caller).await,
    }
}

/// A session-era message without a session that is not `initialize`:
/// only `server/discover` is answered (its `_meta` and headers agreeing);
/// anything else needs a session.
async fn session_era(
    parts: axum::http::request::Parts,
    parsed: ClientJsonRpcMessage,
    make: MakeHandler,
    caller: Caller,
) -> Response {
    if let Some(refused) = refusals::post_media(&parts.headers) {
        return refused;
    }
    let per_request = matches!(&parsed, ClientJsonRpcMessage::Request(r)
        if rmcp::model::GetMeta::get_meta(&r.request).protocol_version().is_some());
    if let Err(refused) = refusals::version_header(&parts.headers, per_request) {
        return *refused;
    }
    let ClientJsonRpcMessage::Request(JsonRpcRequest { id, request, .. }) = parsed else {
        return refusals::session_required();
    };
    if let Some(refused) = refusals::meta_against_header(&parts.headers, &id, &request) {
        return refused;
    }
    if !matches!(request, ClientRequest::DiscoverRequest(_)) {
        return refusals::session_required();
    }
    match make().await {
        Ok(handler) => {
            Session::of_request(handler)
                .answer(parts, (id, request), caller)
                .await
        }
        Err(answer) => answer,
    }
}

/// The answer an unknown session gets (the transport's words): also what a
/// principal is told of another's session.
pub(crate) fn session_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Not Found: Session not found",
    )
        .into_response()
}

/// What the shutdown does with the answer to a request of `method`
/// carrying `message` (`resumed`: the request whose stream a `GET`
/// resumes, if any).
fn stream_of(method: &Method, message: &Message, resumed: Option<Value>) -> Option<Stream> {
    match (method, &message.id, resumed) {
        (&Method::GET, _, Some(id)) => Some(Stream::Request(id)),
        (&Method::GET, _, None) => Some(Stream::Open),
        (_, Some(_), _) if message.listen => Some(Stream::Open),
        (_, Some(id), _) => Some(Stream::Request(id.clone())),
        _ => None,
    }
}
