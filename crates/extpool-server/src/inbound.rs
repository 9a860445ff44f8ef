//! What an MCP endpoint (`/mcp`, `/sessions/{id}/mcp`) checks and keeps
//! before and after rmcp's streamable HTTP service answers a request:
//!
//! - the body, read once within the size limit and the body timeout;
//! - the message ([`crate::check`], as over stdio): JSON (else `-32700`),
//!   one JSON-RPC message, not a batch (else `-32600`), and the params of
//!   a method MCP defines of the shape it defines (else `-32602`, naming
//!   the method and what is wrong) — all HTTP 400 with a JSON-RPC error,
//!   so no client waits for an answer;
//! - the session's slot and activity ([`crate::live`]): a new or resumed
//!   session takes a slot (at the limit: HTTP 503 saying when one frees),
//!   a request id in flight on the session is refused at once, and the
//!   session is busy while a request or stream is open;
//! - a session not held here is resumed only if the store keeps its
//!   record: one nobody issued (or ended, or without a store) is unknown,
//!   HTTP 404, whatever the slots; the request that resumes it is
//!   admitted with its id before rmcp resumes it, so the id rule holds
//!   for every request of a resumed session, and one session is resumed
//!   by one request at a time (the others wait for it);
//! - an `initialize` that fails makes no session: its session id is taken
//!   back and forgotten by the store, so the client starts afresh;
//! - a session belongs to the principal whose `initialize` made it
//!   ([`crate::identity`]): another principal's request with its id is
//!   answered as an unknown session is (HTTP 404), here and on any replica
//!   that resumes it;
//! - SSE event ids tagged with this replica ([`crate::event_ids`]);
//! - a `DELETE` that ended its session answered 204 (rmcp says 202, which
//!   the SDKs take for a failure);
//! - the shutdown ([`crate::shutdown`]): once it began, a new request or
//!   `GET` stream is refused with HTTP 503, streams that never end by
//!   themselves end, and a request still running when requests are
//!   cancelled is answered with the shutdown error.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;

use crate::check::Message;
use crate::gateway::Shared;
use crate::live::{Busy, Key, Refused};
use crate::metrics::Refusal;
use crate::shutdown::Stream;

/// The session header.
const SESSION_HEADER: &str = "mcp-session-id";
/// Largest `initialize` answer read to see whether it failed.
const MAX_INITIALIZE_ANSWER: usize = 1024 * 1024;
/// Default time a request body has to arrive in full.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The message of a refused oversized body.
pub(crate) fn too_large(declared: Option<u64>, max: usize) -> String {
    match declared {
        Some(size) => format!(
            "the request body is {size} bytes; this extpool gateway accepts at most {max} (extpool serve --max-request-bytes)\n"
        ),
        None => format!(
            "the request body is over {max} bytes, the most this extpool gateway accepts (extpool serve --max-request-bytes)\n"
        ),
    }
}

/// A JSON-RPC error answer (HTTP `status`), for a request that never
/// reaches rmcp.
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

/// A request's body as [`serve`] passes it on: a POST's read and checked
/// ([`check_message`], by the rules of the request's era), with what it
/// says, and, for a 2026-07-28 request or notification, its bytes again
/// for the standard headers' check ([`crate::standard_headers`]). `Err` is
/// the answer to a body refused.
async fn read_checked(
    shared: &Shared,
    parts: &axum::http::request::Parts,
    body: Body,
) -> Result<(Body, Message, Option<Bytes>), Box<Response>> {
    if parts.method != Method::POST {
        return Ok((body, Message::default(), None));
    }
    let era = crate::methods::Era::of(
        parts
            .headers
            .get(rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok()),
    );
    let options = &shared.options;
    let bytes = read_body(body, options.max_body_bytes, options.body_read_timeout)
        .await
        .map_err(Box::new)?;
    let message = check_message(&bytes, era)?;
    let stateless =
        (era == crate::methods::Era::Stateless && !message.answers).then(|| bytes.clone());
    Ok((Body::from(bytes), message, stateless))
}

/// Serves `request` on MCP endpoint `endpoint` (`""` for `/mcp`) through
/// `serve` (rmcp's service), with every check of this module.
pub(crate) async fn serve<F, Fut>(
    shared: &Arc<Shared>,
    endpoint: &str,
    request: Request,
    make: crate::front::MakeHandler,
    serve: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let _arriving = shared.live.arriving(endpoint);
    let principal = crate::identity::of(&request);
    let (mut parts, body) = request.into_parts();
    let resumed = crate::event_ids::resumed_request(&shared.event_tag, &parts);
    if let Some(answer) = crate::event_ids::resume_header(&shared.event_tag, &mut parts) {
        return answer;
    }
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|id| (endpoint.to_owned(), id.to_owned()));
    let (body, mut message, stateless_body) = match read_checked(shared, &parts, body).await {
        Ok(read) => read,
        Err(answer) => return *answer,
    };
    // Read once: who answers it takes it from here.
    if let Some(typed) = message.typed.take() {
        parts.extensions.insert(typed);
    }
    let stream = stream_of(&parts.method, &message, resumed);
    // A resumed request stream carries an answer still owed: not new work.
    let new_work = matches!(stream, Some(Stream::Open)) || message.id.is_some();
    if new_work && shared.draining.is_cancelled() {
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
    let request = Request::from_parts(parts, body);
    let method = request.method().clone();
    let tag_id = message.id.as_ref().map(|id| hex::encode(id.to_string()));
    let grace = shared.options.shutdown_timeout;
    let work = async {
        match session {
            Some(key) => match check_owner(shared, &key, &principal).await {
                Ok(found) => {
                    let admitted = Admitted {
                        key,
                        found,
                        method: &method,
                        message: &message,
                    };
                    in_session(shared, admitted, request, make, serve).await
                }
                Err(answer) => answer,
            },
            None if message.initialize => {
                let owner = crate::identity::owner_of(&principal);
                initialize(shared, endpoint, &message, owner, request, make, serve).await
            }
            None => match &stateless_body {
                Some(body) => {
                    let id = message.id.as_ref();
                    crate::inline::stateless(shared, request, body, id, make, &principal, serve)
                        .await
                }
                None => serve(request).await,
            },
        }
    };
    let stopped = || match &message.id {
        Some(id) => crate::shutdown::cancelled(Some(id), grace),
        None => crate::shutdown::refused(None),
    };
    let work = tracing::Instrument::instrument(work, span.clone());
    let response = tokio::select! {
        // Cancelled before anything was sent: the whole answer is the error.
        biased;
        () = shared.stop.cancelled() => stopped(),
        response = work => response,
    };
    crate::trace::ended(&span, response.status());
    // rmcp answers its own cancellation (which follows `stop`) with an
    // empty 500: the client gets the shutdown error instead.
    let response = if response.status().is_server_error() && shared.stop.is_cancelled() {
        stopped()
    } else {
        response
    };
    let response = match stream {
        Some(stream) => {
            crate::shutdown::follow(response, stream, &shared.draining, &shared.stop, grace)
        }
        None => response,
    };
    let response = ended(&method, response);
    crate::event_ids::tag(&shared.event_tag, response, tag_id.as_deref())
}

/// A session's `DELETE` that ended it is answered 204 No Content: rmcp
/// answers 202, which the official SDKs take for a failure (the Python
/// SDK accepts 200, 204 and 405, and warns on every disconnect otherwise).
fn ended(method: &Method, response: Response) -> Response {
    if *method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
        return StatusCode::NO_CONTENT.into_response();
    }
    response
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

/// The answer an unknown session gets (rmcp's words): also what a
/// principal is told of another's session.
pub(crate) fn session_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Not Found: Session not found",
    )
        .into_response()
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
    let (owner, found) = match shared.live.owner(key) {
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
struct Admitted<'a> {
    key: Key,
    /// Where its owner was found.
    found: Found,
    method: &'a Method,
    message: &'a Message,
}

/// A request of session `key` (`found` where its owner was checked):
/// admitted to it if held here, else resumed into a slot of its own if
/// the store keeps its record ([`crate::front::resume`]), else answered
/// as unknown (HTTP 404). A session of extpool's own front end is
/// answered by [`crate::front::serve`], one rmcp made by `serve`.
async fn in_session<F, Fut>(
    shared: &Arc<Shared>,
    admitted: Admitted<'_>,
    request: Request,
    make: crate::front::MakeHandler,
    serve: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let Admitted {
        key,
        found,
        method,
        message,
    } = admitted;
    let live = &shared.live;
    let id = message.id_text();
    let admitted = match live.admit(&key, id.as_deref()) {
        Ok(busy) => Ok((busy, None)),
        Err(Refused::NotHeld) => {
            // Not held here: rmcp resumes it from the store's record, if
            // there is one; if not, it is unknown, whatever the slots.
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
            shared.metrics.refused(Refusal::DuplicateId);
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
                &crate::live::too_many_requests(),
            );
        }
        Err(Refused::Full(full)) => return refuse_full(shared, message, &full),
        Err(Refused::NotHeld) => return session_not_found(),
    };
    // Admitted while another request resumes the session: this one goes
    // on once that is done.
    busy.until_resumed().await;
    if resuming.is_some() {
        let parts = crate::front::parts_of(&request);
        match crate::front::resume(shared, &key, make, parts).await {
            Ok(session) => live.set_inline(&key, session),
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
    let response = match live.inline(&key).filter(|s| s.outbound().is_some()) {
        Some(session) => crate::front::serve(shared, &key, &session, message, request).await,
        None => crate::inline::serve_admitted(live, &key, message, request, serve).await,
    };
    let gone = response.status() == StatusCode::NOT_FOUND;
    if gone || (*method == Method::DELETE && response.status().is_success()) {
        // Ended (or never known): free its slot.
        drop(busy);
        live.forget(&key);
        return response;
    }
    while_open(response, busy)
}

/// An `initialize` without a session: a slot first; a failed one leaves
/// no session behind.
async fn initialize<F, Fut>(
    shared: &Arc<Shared>,
    endpoint: &str,
    message: &Message,
    owner: Option<String>,
    request: Request,
    make: crate::front::MakeHandler,
    serve: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let slot = match shared.live.reserve(owner.clone()) {
        Ok(slot) => slot,
        Err(full) => return refuse_full(shared, message, &full),
    };
    if crate::front::takes_initialize(&request) {
        let made = match crate::front::initialize(shared, endpoint, make, request).await {
            Ok(made) => made,
            // No session: the slot is given back.
            Err(answer) => return answer,
        };
        record_owner(shared, endpoint, &made.id, owner.as_deref()).await;
        let key = (endpoint.to_owned(), made.id);
        slot.fill(key.clone());
        shared.live.set_inline(&key, made.session);
        return made.response;
    }
    let registration = crate::inline::Registration::default();
    let mut request = request;
    request.extensions_mut().insert(registration.clone());
    let response = serve(request).await;
    let Some(id) = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return response;
    };
    let (mut parts, body) = response.into_parts();
    let read = tokio::time::timeout(
        shared.options.body_read_timeout,
        axum::body::to_bytes(body, MAX_INITIALIZE_ANSWER),
    )
    .await;
    let mut bytes = match read {
        Ok(Ok(bytes)) => bytes,
        _ => {
            shared.resume.discard(endpoint, &id).await;
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                message.id.as_ref(),
                -32603,
                "the gateway could not read its own initialize answer; start again",
            );
        }
    };
    if answers_with_error(&bytes) {
        shared.resume.discard(endpoint, &id).await;
        parts.headers.remove(SESSION_HEADER);
    } else {
        record_owner(shared, endpoint, &id, owner.as_deref()).await;
        let key = (endpoint.to_owned(), id);
        slot.fill(key.clone());
        if let Some(inline) = registration.registered() {
            if let Some(declared) = inline.declare_tasks(&bytes) {
                parts.headers.remove(header::CONTENT_LENGTH);
                bytes = declared.into();
            }
            shared.live.set_inline(&key, inline);
        }
    }
    Response::from_parts(parts, Body::from(bytes))
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

/// Whether an answer (JSON or SSE) carries a JSON-RPC error.
fn answers_with_error(bytes: &[u8]) -> bool {
    let is_error = |v: &Value| v.get("error").is_some() && v.get("result").is_none();
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return is_error(&value);
    }
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .any(|v| is_error(&v))
}

/// The answer at a session limit: HTTP 503 (the gateway's) or 429 (the
/// caller's own), `Retry-After`, and the JSON-RPC error saying when a
/// slot frees.
fn refuse_full(shared: &Shared, message: &Message, full: &crate::live::Full) -> Response {
    shared.metrics.refused(Refusal::Sessions);
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
    let streaming = crate::event_ids::is_event_stream(&response);
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
        assert!(!m.initialize);
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

    #[test]
    fn an_error_answer_is_seen_in_json_and_in_sse() {
        assert!(answers_with_error(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#
        ));
        assert!(answers_with_error(
            b"data: \nid: 0\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}\n\n"
        ));
        assert!(!answers_with_error(
            b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"}}\n\n"
        ));
    }
}
