//! Session-era MCP sessions of extpool's own streamable HTTP front end: a
//! session is an entry in this replica's map ([`crate::live`]) holding its
//! handler and its [`Outbound`] — no task, channel or buffer of its own
//! while it is idle — ended by the one reaper.
//!
//! - **`initialize`** is answered here ([`initialize`]): the handler is
//!   made and initialized in the HTTP task, the answer is
//!   `application/json` with the new `Mcp-Session-Id` (random, 128 bits),
//!   and the client's `initialize` parameters are kept in the state store
//!   when there is one ([`crate::resume`]'s record), so any replica resumes
//!   the session ([`resume`]) by initializing a handler from them again.
//! - **Requests** of such a session are answered as [`crate::inline`]
//!   answers them (JSON, or a stream when something must come first);
//!   **notifications** are taken (202; `notifications/cancelled` cancels
//!   the call it names); the **`GET` stream** carries what the gateway
//!   sends the client outside a call's answer; **`DELETE`** ends the
//!   session and its record (204).
//! - **Headers** are checked as rmcp's transport checks them for the
//!   session era ([`refused_headers`]): `Accept` naming JSON and SSE (406),
//!   a JSON `Content-Type` (415), a known `MCP-Protocol-Version` (400),
//!   and no 2026-07-28 version inside a session, which negotiated an
//!   earlier one (400).
//!
//! Requests of the 2026-07-28 era, which have no session, are answered as
//! [`crate::inline`]'s `stateless` says, `subscriptions/listen` among
//! them. rmcp still answers what neither takes: a 2026-07-28 request its
//! checks refuse, a 2026-07-28 notification, and an `initialize` whose
//! headers rmcp refuses (so those refusals are rmcp's own).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use futures::stream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, InitializeRequestParams, JsonRpcRequest, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;
use rmcp::{RoleServer, ServerHandler};

use crate::client_peer::Outbound;
use crate::gateway::Shared;
use crate::handler::GatewayHandler;
use crate::inline::{InlineSession, Registration};
use crate::live::Key;

/// The session header.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// Makes the handler of a new (or resumed) session of one endpoint: the
/// gateway's for `/mcp`, the durable session's for its own endpoint (or
/// the answer that says why there is none).
pub(crate) type MakeHandler =
    Box<dyn FnOnce() -> BoxFuture<'static, Result<GatewayHandler, Response>> + Send>;

/// A handler with nothing to serve: what the gateway's one stand-in peer
/// runs (see [`Stand`]).
#[derive(Clone, Copy)]
struct Nobody;

impl ServerHandler for Nobody {}

/// The one rmcp peer every own session's request context carries. rmcp's
/// request context needs a peer, and makes one only by running a service;
/// an own session reaches its client through its [`Outbound`] instead
/// (the handler asks [`crate::client_peer::ClientPeer`]), so this one is
/// never sent anything and never says whose it is.
pub(crate) struct Stand(std::sync::OnceLock<Peer<RoleServer>>);

impl Stand {
    /// None made yet (made on first use, in the runtime that serves).
    pub(crate) fn new() -> Self {
        Self(std::sync::OnceLock::new())
    }

    /// The stand-in peer (made the first time).
    pub(crate) fn peer(&self) -> Peer<RoleServer> {
        self.0
            .get_or_init(|| {
                let transport = (
                    futures::sink::drain::<ServerJsonRpcMessage>(),
                    stream::pending::<ClientJsonRpcMessage>(),
                );
                // Its service ends when dropped here; the peer stays a value.
                rmcp::service::serve_directly(Nobody, transport, None)
                    .peer()
                    .clone()
            })
            .clone()
    }
}

/// A new session id: 128 random bits, hex (the spec asks for an id no one
/// can guess).
fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

/// A JSON-RPC error answer with HTTP `status`.
fn rpc_error(status: StatusCode, id: Option<&RequestId>, code: i64, message: &str) -> Response {
    let id = id.and_then(|id| serde_json::to_value(id).ok());
    crate::inbound::rpc_error(status, id.as_ref(), code, message)
}

/// A plain-text refusal, in rmcp's words where rmcp has words for it.
fn plain(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.to_owned(),
    )
        .into_response()
}

/// Whether `request` (an `initialize`) is one this module makes a session
/// for: a POST whose headers rmcp would take ([`refused_headers`] finds
/// nothing) and that asks for no 2026-07-28 version.
pub(crate) fn takes_initialize(request: &Request) -> bool {
    request.method() == Method::POST && refused_headers(request, None).is_none()
}

/// What is wrong with the headers of `request` of an own session (or of
/// its `initialize`, `negotiated` `None`): the refusal, or `None`.
pub(crate) fn refused_headers(request: &Request, negotiated: Option<&str>) -> Option<Response> {
    let headers = request.headers();
    if request.method() == Method::POST {
        let (json, sse) = crate::inline::accepted(headers);
        if !json || !sse {
            return Some(plain(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: Client must accept both application/json and text/event-stream",
            ));
        }
        if !crate::inline::json_body(headers) {
            return Some(plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Unsupported Media Type: Content-Type must be application/json",
            ));
        }
    }
    let version = headers.get(HEADER_MCP_PROTOCOL_VERSION)?;
    let Ok(version) = version.to_str() else {
        return Some(plain(
            StatusCode::BAD_REQUEST,
            "Bad Request: Invalid MCP-Protocol-Version header encoding",
        ));
    };
    if !extpool_host::mcp::versions::speaks(version) {
        return Some(plain(
            StatusCode::BAD_REQUEST,
            &format!("Bad Request: Unsupported MCP-Protocol-Version: {version}"),
        ));
    }
    // Inside a session it is refused; an initialize of that version is
    // left to rmcp's transport (`takes_initialize`).
    if crate::methods::Era::of(Some(version)) == crate::methods::Era::Stateless {
        let negotiated = negotiated.unwrap_or("no version");
        return Some(plain(
            StatusCode::BAD_REQUEST,
            &format!(
                "Bad Request: this session negotiated MCP {negotiated} at initialize; a request of MCP {version} belongs to no session (send it without Mcp-Session-Id)"
            ),
        ));
    }
    None
}

/// What [`initialize`] made.
pub(crate) struct Made {
    /// The answer, with the session's id.
    pub response: Response,
    /// The session's id.
    pub id: String,
    /// The session.
    pub session: Arc<InlineSession>,
}

/// Initializes `handler` for a client that sent `params` (with the HTTP
/// request's `parts`: its principal, its headers), keeping the session it
/// opened. `Err` is the handler's refusal.
async fn open(
    shared: &Shared,
    handler: GatewayHandler,
    params: InitializeRequestParams,
    mut parts: axum::http::request::Parts,
) -> Result<(Arc<InlineSession>, rmcp::model::InitializeResult), rmcp::ErrorData> {
    let outbound = Outbound::new(params.clone());
    let registration = Registration::default();
    parts.extensions.insert(registration.clone());
    let mut context = RequestContext::new(RequestId::Number(0), shared.stand.peer());
    context.extensions.insert(parts);
    context.extensions.insert(outbound);
    let result = handler.initialize(params, context).await?;
    let session = registration.registered().ok_or_else(|| {
        rmcp::ErrorData::internal_error("the session's handler did not register", None)
    })?;
    Ok((session, result))
}

/// Answers `request`, an `initialize` without a session on `endpoint`
/// (checked by [`crate::check`], its slot taken by [`crate::inbound`]):
/// the session made, or the answer when none was.
pub(crate) async fn initialize(
    shared: &Arc<Shared>,
    endpoint: &str,
    make: MakeHandler,
    request: Request,
) -> Result<Made, Response> {
    let (parts, body) = request.into_parts();
    // Read and checked already: this is its one buffer.
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let (id, params) = match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(ClientJsonRpcMessage::Request(JsonRpcRequest {
            id,
            request: ClientRequest::InitializeRequest(init),
            ..
        })) => (id, init.params),
        _ => {
            return Err(rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                -32600,
                "an initialize request was expected",
            ));
        }
    };
    let handler = make().await?;
    let Some(session_id) = new_id() else {
        return Err(rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            Some(&id),
            -32603,
            "the gateway could not draw a session id (no randomness); retry",
        ));
    };
    let (session, result) = match open(shared, handler, params.clone(), parts).await {
        Ok(opened) => opened,
        Err(error) => {
            let answer = ServerJsonRpcMessage::error(error, Some(id));
            return Err(crate::inline::json(&answer));
        }
    };
    shared.resume.keep(endpoint, &session_id, &params).await;
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

/// Resumes session `key`, which another replica (or this one, before its
/// slot was freed) made, from the store's record: a handler made by
/// `make` is initialized with the client's `initialize` parameters again.
/// `Err` is the answer: the session is unknown (404) when the record is
/// gone or unreadable.
pub(crate) async fn resume(
    shared: &Arc<Shared>,
    key: &Key,
    make: MakeHandler,
    parts: axum::http::request::Parts,
) -> Result<Arc<InlineSession>, Response> {
    let Some(params) = shared.resume.load(&key.0, &key.1).await else {
        return Err(crate::inbound::session_not_found());
    };
    let handler = make().await?;
    match open(shared, handler, params, parts).await {
        Ok((session, _)) => {
            tracing::debug!(endpoint = %key.0, "MCP session resumed from the store");
            Ok(session)
        }
        Err(error) => {
            tracing::warn!(endpoint = %key.0, "an MCP session could not be resumed: {}", error.message);
            Err(crate::inbound::session_not_found())
        }
    }
}

/// What a resumed session's handler is initialized with of `request`
/// that resumes it: its method, address, headers and principal.
pub(crate) fn parts_of(request: &Request) -> axum::http::request::Parts {
    let mut parts = Request::new(()).into_parts().0;
    parts.method = request.method().clone();
    parts.uri = request.uri().clone();
    parts.headers = request.headers().clone();
    parts
        .extensions
        .insert(crate::identity::of_parts(request.extensions()));
    parts
}

/// Answers `request` (carrying `message`) of own session `key`, admitted
/// to it.
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    key: &Key,
    session: &Arc<InlineSession>,
    message: &crate::check::Message,
    request: Request,
) -> Response {
    if let Some(request_id) = &message.cancels {
        session.cancel(request_id);
    }
    let info = session.client_info();
    let negotiated = info.as_ref().map(|info| info.protocol_version.as_str());
    if let Some(refused) = refused_headers(&request, negotiated) {
        return refused;
    }
    match *request.method() {
        Method::GET => get(session, request),
        Method::DELETE => {
            session.end();
            shared.resume.discard(&key.0, &key.1).await;
            StatusCode::NO_CONTENT.into_response()
        }
        Method::POST if message.id.is_some() || message.answers => {
            match crate::inline::answer_own(session, request).await {
                Ok(response) => response,
                Err(id) => rpc_error(
                    StatusCode::BAD_REQUEST,
                    id.as_ref(),
                    -32600,
                    "this session is initialized already; an initialize starts a new session (send it without Mcp-Session-Id)",
                ),
            }
        }
        // A notification: taken (a cancel was applied on admission).
        Method::POST => StatusCode::ACCEPTED.into_response(),
        _ => plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: an MCP endpoint takes GET, POST and DELETE",
        ),
    }
}

/// The session's `GET` stream: a stream made here that the client resumes
/// by its `Last-Event-ID`, else the stream of what the gateway sends the
/// client outside a call's answer (one at a time: 409 while one is open).
fn get(session: &Arc<InlineSession>, request: Request) -> Response {
    let (_, accepts_sse) = crate::inline::accepted(request.headers());
    if !accepts_sse {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept text/event-stream",
        );
    }
    if let Some(last) = request
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        && let Some(resumed) = session.resume(last)
    {
        return resumed;
    }
    let Some(outbound) = session.outbound() else {
        return plain(StatusCode::NOT_FOUND, "Not Found: Session not found");
    };
    let Some(messages) = outbound.open_stream() else {
        return plain(
            StatusCode::CONFLICT,
            "Conflict: this session's GET stream is open already; one at a time",
        );
    };
    crate::inline::listen(messages, outbound.closed().clone())
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

    fn post(pairs: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder().method(Method::POST).uri("/mcp");
        for (k, v) in pairs {
            builder = builder.header(*k, *v);
        }
        builder.body(Body::empty()).expect("request")
    }

    const BASE: [(&str, &str); 2] = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];

    fn status(request: &Request, negotiated: Option<&str>) -> Option<u16> {
        refused_headers(request, negotiated).map(|r| r.status().as_u16())
    }

    #[test]
    fn headers_are_refused_as_rmcps_transport_refuses_them() {
        assert_eq!(status(&post(&BASE), Some("2025-11-25")), None);
        assert_eq!(status(&post(&BASE[1..]), None), Some(406));
        assert_eq!(
            status(&post(&[("accept", "application/json"), BASE[1]]), None),
            Some(406)
        );
        assert_eq!(status(&post(&BASE[..1]), None), Some(415));
        assert_eq!(
            status(&post(&[BASE[0], ("content-type", "text/plain")]), None),
            Some(415)
        );
        let versioned = |v: &'static str| post(&[BASE[0], BASE[1], ("mcp-protocol-version", v)]);
        assert_eq!(status(&versioned("2025-06-18"), Some("2025-06-18")), None);
        assert_eq!(
            status(&versioned("1999-01-01"), Some("2025-06-18")),
            Some(400)
        );
        assert_eq!(
            status(&versioned("2026-07-28"), Some("2025-11-25")),
            Some(400)
        );
        let get = Request::builder()
            .method(Method::GET)
            .body(Body::empty())
            .expect("get");
        assert_eq!(status(&get, Some("2025-11-25")), None, "GET has no body");
    }

    #[test]
    fn an_initialize_of_the_2026_era_is_left_to_rmcp() {
        let v2026 = post(&[BASE[0], BASE[1], ("mcp-protocol-version", "2026-07-28")]);
        assert!(!takes_initialize(&v2026));
        assert!(takes_initialize(&post(&BASE)));
        assert!(!takes_initialize(&post(&BASE[..1])));
    }

    #[test]
    fn session_ids_are_random_and_distinct() {
        let a = new_id().expect("id");
        let b = new_id().expect("id");
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
