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
//!   so no client waits for an answer;
//! - the transport's rules of streamable HTTP ([`refusals`]): media types,
//!   the version header, `_meta` against it, what needs a session;
//! - the session's slot and activity ([`crate::held::live`]): a new or resumed
//!   session takes a slot (at the limit: HTTP 503 saying when one frees),
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
//! ([`initialize`]); a session's request is answered by its [`Session`]
//! (JSON, or a stream when something must come first), its
//! notifications taken (202; `notifications/cancelled` cancels the call
//! it names), its answers to what the gateway asked taken, its `GET`
//! stream carries what the gateway sends the client outside a call's
//! answer (a stream of a call resumed by its `Last-Event-ID`), its
//! `DELETE` ends it and its record (204); a 2026-07-28 message, which has
//! no session, is answered as [`stateless`] says.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcRequest};
use serde_json::Value;

use crate::check::Message;
use crate::handler::caller::Caller;
use crate::held::live::{Busy, Key, Refused};
use crate::methods::Era;
use crate::metrics::Refusal;
use crate::shared::Shared;
use crate::shutdown::Stream;

pub(crate) mod event_ids;
mod initialize;
mod listen;
pub(crate) mod reaper;
mod refusals;
mod running;
mod session;
pub(crate) mod standard_headers;
mod stateless;

pub(crate) use crate::held::replay::event_stream;
pub(crate) use initialize::MakeHandler;
pub(crate) use session::Session;

use initialize::SESSION_HEADER;

pub(crate) use crate::guard::too_large;

/// A JSON-RPC error answer (HTTP `status`), for a request refused before
/// its handler sees it.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<&Value>,
    code: i64,
    message: &str,
) -> Response {
    let body = crate::check::error_answer(id, code, message);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Checks one POSTed body ([`crate::check::check_message`], the rule
/// stdio follows too). `Err` is the answer: HTTP 400 with the JSON-RPC
/// error.
pub(crate) fn check_message(
    bytes: &[u8],
    era: crate::methods::Era,
) -> Result<Message, Box<Response>> {
    crate::check::check_message(bytes, era).map_err(|refused| {
        Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            refused.id.as_ref(),
            refused.code,
            &refused.message,
        ))
    })
}

/// Whether reading a body failed for its size (not for its framing).
fn is_length_limit(error: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = e.source();
    }
    false
}

/// Reads a request body within `max` bytes and `timeout`.
async fn read_body(body: Body, max: usize, timeout: Duration) -> Result<Bytes, Response> {
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, max)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if is_length_limit(&e) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            too_large(None, max),
        )
            .into_response()),
        Ok(Err(e)) => Err((
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("the request body could not be read: {e}\n"),
        )
            .into_response()),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!(
                "the request body did not arrive within {} s\n",
                timeout.as_secs()
            ),
        )
            .into_response()),
    }
}

/// A request as the door read it: a POST's body (read and checked by the
/// rules of the request's era, [`check_message`]) and its message, read
/// once.
struct Read {
    /// What the check says of it (nothing for a `GET` or a `DELETE`).
    message: Message,
    /// Its body (empty for a `GET` or a `DELETE`).
    bytes: Bytes,
    /// Its message read as its type (`None` for a `GET` or a `DELETE`).
    parsed: Option<ClientJsonRpcMessage>,
}

/// The era of a request with `headers`, by its `MCP-Protocol-Version`.
fn era_of(headers: &axum::http::HeaderMap) -> Era {
    Era::of(
        headers
            .get(rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok()),
    )
}

/// Reads `body` of a request with `parts`. `Err` is the answer to a body
/// refused.
async fn read(
    shared: &Shared,
    parts: &axum::http::request::Parts,
    body: Body,
) -> Result<Read, Box<Response>> {
    if parts.method != Method::POST {
        return Ok(Read {
            message: Message::default(),
            bytes: Bytes::new(),
            parsed: None,
        });
    }
    let options = &shared.options;
    let bytes = read_body(body, options.max_body_bytes, options.body_read_timeout)
        .await
        .map_err(Box::new)?;
    let mut message = check_message(&bytes, era_of(&parts.headers))?;
    // The check read a plain request already; anything else is read once
    // here (the check passed it, so it reads).
    let parsed = match message.typed.take() {
        Some(crate::check::Typed(id, request)) => Some(ClientJsonRpcMessage::request(request, id)),
        None => extpool_host::mcp::transport::client_message(&bytes).ok(),
    };
    Ok(Read {
        message,
        bytes,
        parsed,
    })
}

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
        return initialize(shared, opening, make, (id, init.params)).await;
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

/// Where a session was found when its owner was checked.
enum Found {
    /// Held here.
    Here,
    /// Not held here: its record in the store and that record's owner
    /// (`None`: no record, or no store).
    Stored(Option<Option<String>>),
}

/// The store's record of MCP session `key`: `None` when there is none
/// (or no store), else its owner. `Err` is the answer when the store
/// does not answer.
async fn stored(shared: &Shared, key: &Key) -> Result<Option<Option<String>>, Response> {
    let Some(sessions) = &shared.sessions else {
        return Ok(None);
    };
    match sessions.store().mcp_session_owner(&key.0, &key.1).await {
        Ok(record) => Ok(record),
        Err(e) => {
            tracing::warn!("cannot read an MCP session's owner: {e}");
            Err(rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                -32000,
                "the session could not be looked up (the state store does not answer); retry",
            ))
        }
    }
}

/// Whether `principal` may use MCP session `key`: its owner (as this
/// replica holds it, or as the store keeps it for a resume), or an
/// operator. A session known nowhere passes here and is answered 404 by
/// [`in_session`].
async fn check_owner(
    shared: &Shared,
    key: &Key,
    principal: &extpool_host::core::Principal,
) -> Result<Found, Response> {
    let (owner, found) = match shared.front.live.owner(key) {
        Some(owner) => (owner, Found::Here),
        None => match stored(shared, key).await? {
            Some(owner) => (owner.clone(), Found::Stored(Some(owner))),
            None => return Ok(Found::Stored(None)),
        },
    };
    if principal.may_act_on(owner.as_deref()) {
        Ok(found)
    } else {
        Err(session_not_found())
    }
}

/// A request of a session, its owner checked.
struct Admitted {
    key: Key,
    /// Where its owner was found.
    found: Found,
}

/// A request of session `key` (`found` where its owner was checked):
/// admitted to it if held here, else resumed into a slot of its own if
/// the store keeps its record ([`initialize::resume`]), else answered as
/// unknown (HTTP 404); then answered by the session ([`in_own_session`]).
async fn in_session(
    shared: &Arc<Shared>,
    admitted: Admitted,
    parts: axum::http::request::Parts,
    read: Read,
    make: MakeHandler,
    principal: &Arc<extpool_host::core::Principal>,
) -> Response {
    let Admitted { key, found } = admitted;
    let message = &read.message;
    let live = &shared.front.live;
    let id = message.id_text();
    let admitted = match live.admit(&key, id.as_deref()) {
        Ok(busy) => Ok((busy, None)),
        Err(Refused::NotHeld) => {
            // Not held here: resumed from the store's record, if there is
            // one; if not, it is unknown, whatever the slots.
            let record = match found {
                Found::Stored(record) => record,
                // Held when its owner was checked, expired since.
                Found::Here => match stored(shared, &key).await {
                    Ok(record) => record,
                    Err(answer) => return answer,
                },
            };
            let Some(owner) = record else {
                return session_not_found();
            };
            live.resume(&key, owner, id.as_deref())
        }
        Err(refused) => Err(refused),
    };
    let (mut busy, resuming) = match admitted {
        Ok(admitted) => admitted,
        Err(Refused::DuplicateId) => {
            shared.ops.metrics.refused(Refusal::DuplicateId);
            return rpc_error(
                StatusCode::BAD_REQUEST,
                message.id.as_ref(),
                -32600,
                &format!(
                    "request id {} is already in use by a request in flight on this session; give each request its own id",
                    id.unwrap_or_default()
                ),
            );
        }
        Err(Refused::TooMany) => {
            return rpc_error(
                StatusCode::TOO_MANY_REQUESTS,
                message.id.as_ref(),
                -32000,
                &crate::held::live::too_many_requests(),
            );
        }
        Err(Refused::Full(full)) => return refuse_full(shared, message, &full),
        Err(Refused::NotHeld) => return session_not_found(),
    };
    // Admitted while another request resumes the session: this one goes
    // on once that is done.
    busy.until_resumed().await;
    if resuming.is_some() {
        match initialize::resume(shared, &key, make, principal).await {
            Ok(session) => live.set_session(&key, session),
            Err(answer) => {
                // The resume came to nothing (its record is gone, or the
                // store failed): no session here, unless a request
                // admitted meanwhile still makes one.
                drop(resuming);
                drop(busy);
                live.forget_unused(&key);
                return answer;
            }
        }
    }
    // The session is resumed: the requests waiting for it go on.
    drop(resuming);
    let method = parts.method.clone();
    let response = match live.session::<Session>(&key) {
        Some(session) => {
            let caller = Caller::of(shared, principal.clone()).presenting(&parts.extensions);
            in_own_session(shared, &key, &session, (parts, read), caller).await
        }
        None => session_not_found(),
    };
    let gone = response.status() == StatusCode::NOT_FOUND;
    if gone || (method == Method::DELETE && response.status().is_success()) {
        // Ended (or never known): free its slot.
        drop(busy);
        live.forget(&key);
        return response;
    }
    while_open(response, busy)
}

/// Answers a request (`parts`, as `read`) of `session`, held here as
/// `key` and admitted to it: `GET` its stream (or a call's, resumed),
/// `DELETE` its end, a POSTed request its answer, a notification or an
/// answer to the gateway's question taken.
async fn in_own_session(
    shared: &Arc<Shared>,
    key: &Key,
    session: &Arc<Session>,
    (parts, read): (axum::http::request::Parts, Read),
    caller: Caller,
) -> Response {
    let Read {
        message,
        bytes,
        parsed,
    } = read;
    if let Some(request_id) = &message.cancels {
        session.cancel(request_id);
    }
    let info = session.client_info();
    let negotiated = info.as_ref().map(|info| info.protocol_version.as_str());
    if let Some(refused) = refusals::in_session(&parts.method, &parts.headers, negotiated) {
        return refused;
    }
    match parts.method {
        Method::GET => get(session, &parts.headers),
        Method::DELETE => {
            session.end();
            shared.front.resume.discard(&key.0, &key.1).await;
            StatusCode::NO_CONTENT.into_response()
        }
        Method::POST => match parsed {
            Some(ClientJsonRpcMessage::Request(JsonRpcRequest {
                id,
                request: ClientRequest::InitializeRequest(_),
                ..
            })) => refusals::rpc_error(
                StatusCode::BAD_REQUEST,
                Some(&id),
                -32600,
                "this session is initialized already; an initialize starts a new session (send it without Mcp-Session-Id)",
            ),
            Some(ClientJsonRpcMessage::Request(JsonRpcRequest { id, request, .. })) => {
                let request = session.request_of(request, &bytes);
                session.answer(parts, (id, request), caller).await
            }
            Some(ClientJsonRpcMessage::Notification(notification)) => {
                if matches!(
                    notification.notification,
                    rmcp::model::ClientNotification::InitializedNotification(_)
                ) {
                    session.handler.initialized();
                }
                StatusCode::ACCEPTED.into_response()
            }
            Some(answer) => {
                session.answered(&answer);
                StatusCode::ACCEPTED.into_response()
            }
            None => refusals::rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                -32600,
                "the message could not be read",
            ),
        },
        _ => refusals::plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: an MCP endpoint takes GET, POST and DELETE",
        ),
    }
}

/// The session's `GET` stream: a stream made here that the client resumes
/// by its `Last-Event-ID`, else the stream of what the gateway sends the
/// client outside a call's answer (one at a time: 409 while one is open).
fn get(session: &Arc<Session>, headers: &axum::http::HeaderMap) -> Response {
    let (_, accepts_sse) = refusals::accepted(headers);
    if !accepts_sse {
        return refusals::plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok())
        && let Some(resumed) = session.resume(last)
    {
        return resumed;
    }
    let Some(outbound) = session.outbound() else {
        return refusals::plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
    };
    let Some(messages) = outbound.open_stream() else {
        return refusals::plain(
            StatusCode::CONFLICT,
            "Conflict: this session's GET stream is open already; one at a time",
        );
    };
    crate::held::replay::listen(messages, outbound.closed().clone())
}

/// An `initialize` on its way: where, what the check said of it, and who
/// sends it.
struct Opening<'a> {
    endpoint: &'a str,
    message: &'a Message,
    /// Its principal's owner key ([`extpool_host::core::Principal::owner`]).
    owner: Option<String>,
    principal: &'a Arc<extpool_host::core::Principal>,
}

/// An `initialize` without a session (`request`, its id and params): a
/// slot first; a failed one leaves no session behind.
async fn initialize(
    shared: &Arc<Shared>,
    opening: Opening<'_>,
    make: MakeHandler,
    request: (rmcp::model::RequestId, rmcp::model::InitializeRequestParams),
) -> Response {
    let Opening {
        endpoint,
        message,
        owner,
        principal,
    } = opening;
    let slot = match shared.front.live.reserve(owner.clone()) {
        Ok(slot) => slot,
        Err(full) => return refuse_full(shared, message, &full),
    };
    let made = match initialize::initialize(shared, endpoint, make, principal, request).await {
        Ok(made) => made,
        // No session: the slot is given back.
        Err(answer) => return answer,
    };
    record_owner(shared, endpoint, &made.id, owner.as_deref()).await;
    let key = (endpoint.to_owned(), made.id);
    slot.fill(key.clone());
    shared.front.live.set_session(&key, made.session);
    made.response
}

/// Records `owner` as the owner of MCP session `id` of `endpoint` in the
/// store, so any replica resumes it for that owner only.
async fn record_owner(shared: &Shared, endpoint: &str, id: &str, owner: Option<&str>) {
    if let (Some(owner), Some(sessions)) = (owner, &shared.sessions)
        && let Err(e) = sessions
            .store()
            .set_mcp_session_owner(endpoint, id, owner)
            .await
    {
        // Other replicas then cannot resume it for its owner; this one
        // still serves it.
        tracing::warn!("cannot record an MCP session's owner: {e}");
    }
}

/// The answer at a session limit: HTTP 503 (the gateway's) or 429 (the
/// caller's own), `Retry-After`, and the JSON-RPC error saying when a
/// slot frees.
fn refuse_full(shared: &Shared, message: &Message, full: &crate::held::live::Full) -> Response {
    shared.ops.metrics.refused(Refusal::Sessions);
    let mut answer = rpc_error(
        StatusCode::from_u16(full.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
        message.id.as_ref(),
        -32000,
        &full.message(),
    );
    if let Ok(value) = HeaderValue::from_str(&full.retry_after().to_string()) {
        answer.headers_mut().insert(header::RETRY_AFTER, value);
    }
    answer
}

/// `response`, keeping its session busy until an SSE body ends (a JSON or
/// empty body is whole already).
fn while_open(response: Response, busy: Busy) -> Response {
    let streaming = crate::front::event_ids::is_event_stream(&response);
    if !streaming {
        return response;
    }
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _busy = &busy;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::Era;

    async fn refusal(body: &str) -> (u16, Value) {
        let answer = check_message(body.as_bytes(), Era::Session).expect_err(body);
        let status = answer.status().as_u16();
        let bytes = axum::body::to_bytes(answer.into_body(), 65536)
            .await
            .unwrap_or_default();
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    #[tokio::test]
    async fn malformed_messages_get_the_json_rpc_error_that_names_them() {
        for (body, code, says) in [
            ("", -32700, "empty"),
            ("  \n", -32700, "empty"),
            ("{bad", -32700, "not JSON"),
            ("[]", -32600, "batch"),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                -32600,
                "batch",
            ),
            ("7", -32600, "an object"),
            (r#"{"id":1,"method":"ping"}"#, -32600, "2.0"),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                -32600,
                "string or an integer",
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
                -32602,
                "invalid params for tools/call",
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{}}"#,
                -32602,
                "uri",
            ),
        ] {
            let (status, answer) = refusal(body).await;
            assert_eq!(status, 400, "{body}: {answer}");
            assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(says), "{body}: {message}");
        }
        let (_, answer) =
            refusal(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#).await;
        assert_eq!(answer["id"], 3);
    }

    #[test]
    fn well_formed_messages_pass() {
        let m = check_message(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            Era::Session,
        )
        .expect("call");
        assert_eq!(m.id, Some(Value::from("a")));
        let m = check_message(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            Era::Session,
        )
        .expect("notification");
        assert_eq!(m.id, None);
        let m = check_message(
            br#"{"jsonrpc":"2.0","id":1,"method":"vendor/custom","params":{}}"#,
            Era::Session,
        )
        .expect("a method MCP does not define goes to the handler");
        assert_eq!(m.id, Some(Value::from(1)));
        let m = check_message(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Era::Session)
            .expect("response");
        assert_eq!(m.id, None, "a client's response is no request");
    }
}
