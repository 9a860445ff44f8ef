//! A session-era session's requests answered in the HTTP task that
//! received them, without rmcp's session worker: the request is read once
//! and dispatched to the session's [`GatewayHandler`] there. A result that
//! comes within [`InlineSession::wait`] with nothing before it is answered as
//! `application/json`; otherwise the answer is an SSE stream ([`replay`]),
//! primed at once so a client whose connection breaks resumes it, that
//! carries what comes first — the call's progress, an upstream's log
//! messages, or its requests of the client (sampling, elicitation), whose
//! answers come back by POST and are taken here
//! ([`InlineSession::answered`]) — and then the result.
//!
//! rmcp still makes the session (its `initialize`), and still answers
//! everything this module does not take: notifications, the `GET` stream
//! (but a resume of a stream made here), `DELETE`, the request that
//! resumes a session from the store, answers to its own requests, and a
//! request whose headers need what only rmcp's transport does — a header
//! it must check against the body (`MCP-Protocol-Version` 2026-07-28 and
//! later, `Mcp-Method`, `Mcp-Name`, a per-request protocol version), or an
//! `Accept` or `Content-Type` it refuses. What the handler sends a client
//! outside a call's answer (a list change, a resource update) still goes
//! through the session's rmcp peer, on its `GET` stream.
//!
//! A request answered here is cancelled by the client's
//! `notifications/cancelled` naming its id ([`InlineSession::cancel`]); one
//! answered as JSON also when its client goes away before the answer, or
//! the gateway stops (a stream's call goes on, and the shutdown answers
//! its stream as it does rmcp's).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetExtensions, GetMeta, JsonRpcRequest, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{RoleServer, Service};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::handler::GatewayHandler;
use crate::relay::InlineRelay;

mod headers;
pub(crate) mod kept;
mod replay;
mod running;
mod stateless;
mod subscriptions;

pub(crate) use headers::{accepted, json_body};
pub(crate) use replay::{event_stream, listen};
pub(crate) use running::{AbortOnDrop, json};
pub(crate) use stateless::serve as stateless;

use running::{
    Call, First, InFlight, Outbox, OutboxProgress, Queued, Running, stream, with_status,
};

use headers::plain_headers;

/// How long a request's answer may take to be answered whole, as JSON;
/// past it the answer becomes a stream (primed, so a client whose
/// connection breaks resumes it), as it does when anything comes first.
/// With a state store (replicas that take over each other's sessions) an
/// answer not ready at once is primed at once, so a client whose replica
/// dies mid-call always has a stream to resume on another ([`InlineSession::wait`]).
const GRACE: std::time::Duration = std::time::Duration::from_millis(20);

/// How long a request's answer waits for what comes first of its call
/// before it is sent as a stream.
enum Wait {
    /// At most this long (a session's request: [`InlineSession::wait`]).
    Grace(std::time::Duration),
    /// Not at all: only what is ready when first polled.
    None,
    /// Until it comes: a 2026-07-28 request's answer's HTTP status is its
    /// first message's ([`stateless::status_of`]).
    Whole,
}

/// How many log messages and requests of one call may wait for its
/// answer's stream.
const OUTBOX_QUEUE: usize = 256;

/// A request id as the JSON text it was sent as: the key of requests in
/// flight and of requests waiting for the client's answer (as
/// [`crate::check::Message::id_text`] keys a checked message's id).
fn id_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

/// A session whose requests are answered in the HTTP task: its handler,
/// the peer rmcp made for it (what the handler sends outside a call's
/// answer), and the requests in flight here, to cancel.
pub(crate) struct InlineSession {
    handler: GatewayHandler,
    peer: Peer<RoleServer>,
    /// How the session's client is reached outside a call's answer.
    client: crate::client_peer::ClientPeer,
    /// Each request answered here now, by its id as JSON text.
    in_flight: Mutex<HashMap<String, CancellationToken>>,
    /// Each request sent to the client on a call's stream and not yet
    /// answered, by its id as JSON text.
    asked: Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>,
    /// Numbers the requests sent to the client.
    next_ask: AtomicU64,
    /// The answers made as streams, for a client that resumes one.
    replays: replay::Replays,
    /// The session of one 2026-07-28 request ([`stateless`]).
    stateless: bool,
}

impl std::fmt::Debug for InlineSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineSession")
            .field("in_flight", &self.in_flight.lock().len())
            .finish_non_exhaustive()
    }
}

impl InlineSession {
    /// The stand-in session of one 2026-07-28 request, which has none:
    /// `handler` answers it, and nothing reaches its client but the
    /// answer (`peer` is the gateway's stand-in).
    fn of_request(handler: GatewayHandler, peer: Peer<RoleServer>) -> Arc<Self> {
        let client = crate::client_peer::ClientPeer::Rmcp(peer.clone());
        Self::new(handler, peer, client, true)
    }

    /// A session of `handler`, reached through `peer` and `client`, with
    /// nothing in flight.
    fn new(
        handler: GatewayHandler,
        peer: Peer<RoleServer>,
        client: crate::client_peer::ClientPeer,
        stateless: bool,
    ) -> Arc<Self> {
        let kept = handler.shared().kept_streams.clone();
        Arc::new(InlineSession {
            handler,
            peer,
            client,
            in_flight: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(0),
            replays: replay::Replays::new(kept),
            stateless,
        })
    }

    /// How long this session's answers wait for what comes first.
    /// A session's: [`GRACE`], or with a state store (replicas that take
    /// over each other's sessions) only an answer ready at once, so a
    /// client whose replica dies mid-call always has a stream to resume.
    fn wait(&self) -> Wait {
        if self.stateless {
            Wait::Whole
        } else if self.handler.shared().sessions.is_none() {
            Wait::Grace(GRACE)
        } else {
            Wait::None
        }
    }

    /// Cancels the request answered here whose id is `request_id` (the
    /// `requestId` of the client's `notifications/cancelled`), if any.
    pub(crate) fn cancel(&self, request_id: &Value) {
        if let Some(ct) = self.in_flight.lock().get(&request_id.to_string()) {
            ct.cancel();
        }
    }

    /// The outbound side of a session of extpool's own front end
    /// ([`crate::front`]); `None` for one rmcp made.
    pub(crate) fn outbound(&self) -> Option<&Arc<crate::client_peer::Outbound>> {
        match &self.client {
            crate::client_peer::ClientPeer::Own(outbound) => Some(outbound),
            crate::client_peer::ClientPeer::Rmcp(_)
            | crate::client_peer::ClientPeer::Listener(_) => None,
        }
    }

    /// What the client said of itself at `initialize`.
    pub(crate) fn client_info(&self) -> Option<Arc<rmcp::model::InitializeRequestParams>> {
        self.client.info()
    }

    /// Ends an own session: its `GET` stream ends, its calls in flight are
    /// cancelled, nothing more reaches its client.
    pub(crate) fn end(&self) {
        if let Some(outbound) = self.outbound() {
            outbound.close();
        }
        for ct in self.in_flight.lock().values() {
            ct.cancel();
        }
    }

    /// The session's `initialize` answer (`bytes`) with the `tasks`
    /// capability its gateway declares, when it declares it
    /// ([`crate::tasks`]); rmcp's model has no field for it.
    pub(crate) fn declare_tasks(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        crate::tasks::declare_in(bytes, &self.handler.declared_tasks()?)
    }

    /// The rest of an answer made here as a stream, for a `GET` whose
    /// `Last-Event-ID` (as this replica wrote it) names one of its events;
    /// `None` when it names none of this session's kept streams.
    pub(crate) fn resume(&self, last_event_id: &str) -> Option<Response> {
        self.replays.resume(last_event_id)
    }

    /// Takes the client's answer to a request sent on a call's stream;
    /// `false` when no such request waits for it (rmcp's, then).
    fn answered(&self, message: &ClientJsonRpcMessage) -> bool {
        let (id, answer) = match message {
            ClientJsonRpcMessage::Response(response) => (
                &response.id,
                serde_json::to_value(&response.result).map_err(|e| e.to_string()),
            ),
            ClientJsonRpcMessage::Error(error) => {
                let Some(id) = &error.id else { return false };
                (
                    id,
                    Err(format!(
                        "the client answered with an error: {}",
                        error.error.message
                    )),
                )
            }
            _ => return false,
        };
        match self.asked.lock().remove(&id_key(id)) {
            Some(waiting) => {
                let _ = waiting.send(answer);
                true
            }
            None => false,
        }
    }
}

/// The client of a call answered here, as its upstream servers see it:
/// their requests (sampling, elicitation) and log messages go on the
/// call's stream, and the client's answers come back by POST
/// ([`InlineSession::answered`]).
struct InlineClient {
    session: Arc<InlineSession>,
    outbox: mpsc::Sender<Queued>,
    /// The least severe log level the client wants (`logging/setLevel`).
    level: Arc<std::sync::atomic::AtomicUsize>,
}

/// A request sent to the client, forgotten when its call no longer waits.
struct Asked<'a> {
    session: &'a InlineSession,
    key: String,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.session.asked.lock().remove(&self.key);
    }
}

#[async_trait::async_trait]
impl extpool_host::CallClient for InlineClient {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let request = crate::relay::server_request(method, params)?;
        let n = self.session.next_ask.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("extpool-{n}").into());
        let key = id_key(&id);
        let (tx, rx) = oneshot::channel();
        self.session.asked.lock().insert(key.clone(), tx);
        let _asked = Asked {
            session: &self.session,
            key,
        };
        self.outbox
            .send(Box::new(ServerJsonRpcMessage::request(request, id)))
            .await
            .map_err(|_| format!("the client did not answer {method}: its stream is closed"))?;
        rx.await
            .map_err(|_| format!("the client did not answer {method}: its session ended"))?
            .map_err(|e| format!("the client did not answer {method}: {e}"))
    }

    fn accepts(&self, method: &str) -> bool {
        crate::relay::accepts(self.session.client.info().as_deref(), method)
    }

    fn session(&self) -> Option<Arc<dyn extpool_host::core::ClientSession>> {
        Some(Arc::new(crate::relay::PeerSession(
            self.session.client.clone(),
        )))
    }

    fn log(&self, params: Value) {
        if !crate::relay::wanted(&params, &self.level) {
            return;
        }
        let sent = Outbox::log(params)
            .is_some_and(|message| self.outbox.try_send(Box::new(message)).is_ok());
        if !sent {
            tracing::debug!("a log message was dropped: the client reads too slowly");
        }
    }
}

/// Put on an `initialize` request's extensions by [`crate::inbound`], and
/// filled by the handler that answers it: the session's handler and peer,
/// known only there.
#[derive(Clone, Default)]
pub(crate) struct Registration(Arc<OnceLock<Arc<InlineSession>>>);

impl Registration {
    /// Keeps `handler` and `peer` as the session's (the first time only).
    pub(crate) fn register(
        &self,
        handler: GatewayHandler,
        peer: Peer<RoleServer>,
        client: crate::client_peer::ClientPeer,
    ) {
        let _ = self.0.set(InlineSession::new(handler, peer, client, false));
    }

    /// The session registered, if the handler did.
    pub(crate) fn registered(&self) -> Option<Arc<InlineSession>> {
        self.0.get().cloned()
    }
}

/// Serves `request` (carrying `message`) of session `key`, one rmcp made,
/// admitted to it: here when this module answers it — a request, a
/// client's answer to a request sent here, a `GET` resuming a stream made
/// here; else by `serve` (rmcp's service). A `notifications/cancelled`
/// cancels the call it names here too.
pub(crate) async fn serve_admitted<F, Fut>(
    live: &crate::live::Live,
    key: &crate::live::Key,
    message: &crate::check::Message,
    request: Request,
    serve: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let inline = live.inline(key);
    if let (Some(session), Some(request_id)) = (&inline, &message.cancels) {
        session.cancel(request_id);
    }
    let resumed_here = (request.method() == Method::GET)
        .then(|| request.headers().get("last-event-id"))
        .flatten()
        .and_then(|v| v.to_str().ok())
        .and_then(|last| inline.as_ref()?.resume(last));
    match (resumed_here, inline) {
        (Some(resumed), _) => resumed,
        (None, Some(session)) if message.id.is_some() || message.answers => {
            match answer(&session, request).await {
                Ok(response) => response,
                Err(request) => serve(request).await,
            }
        }
        _ => serve(request).await,
    }
}

/// Whether `request` is one this module answers: any request but the
/// handshake and the streams (`initialize`, `server/discover`,
/// `subscriptions/listen`), without a per-request protocol version.
fn answered_here(request: &ClientRequest) -> bool {
    use rmcp::model::ClientRequest as R;
    !matches!(
        request,
        R::InitializeRequest(_) | R::DiscoverRequest(_) | R::SubscriptionsListenRequest(_)
    ) && request.get_meta().protocol_version().is_none()
}

/// The message of a POST whose body is `bytes`: as the check read it
/// (taken from `parts`), else read now.
fn read(
    parts: &mut axum::http::request::Parts,
    bytes: &[u8],
) -> Result<ClientJsonRpcMessage, serde_json::Error> {
    match parts.extensions.remove::<crate::check::Typed>() {
        Some(crate::check::Typed(id, request)) => Ok(ClientJsonRpcMessage::request(request, id)),
        None => extpool_host::mcp::transport::client_message(bytes),
    }
}

/// Answers `request` of `session` here, or gives it back for rmcp when it
/// is not one this module answers (see the module's documentation).
pub(crate) async fn answer(
    session: &Arc<InlineSession>,
    request: Request,
) -> Result<Response, Request> {
    if request.method() != Method::POST || !plain_headers(request.headers()) {
        return Err(request);
    }
    let (mut parts, body) = request.into_parts();
    // The body was read and checked already: this is its one buffer.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(_) => return Err(Request::from_parts(parts, Body::empty())),
    };
    let message = match read(&mut parts, &bytes) {
        Ok(ClientJsonRpcMessage::Request(JsonRpcRequest { id, request, .. }))
            if answered_here(&request) =>
        {
            (
                id,
                crate::tasks::session_request(request, &bytes, || {
                    session.handler.declared_tasks().is_some()
                }),
            )
        }
        Ok(answer) if session.answered(&answer) => {
            return Ok(StatusCode::ACCEPTED.into_response());
        }
        _ => return Err(Request::from_parts(parts, Body::from(bytes))),
    };
    Ok(dispatch(session, parts, message).await)
}

/// Answers `request` of an own session ([`crate::front`], its headers
/// checked there): every request but `initialize` (`Err` with its id) is
/// dispatched to the handler; an answer to a request of the gateway's is
/// taken (202, also when nothing waits for it any more).
pub(crate) async fn answer_own(
    session: &Arc<InlineSession>,
    request: Request,
) -> Result<Response, Option<RequestId>> {
    let (mut parts, body) = request.into_parts();
    // The body was read and checked already: this is its one buffer.
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let message = match read(&mut parts, &bytes) {
        Ok(ClientJsonRpcMessage::Request(JsonRpcRequest {
            id,
            request: ClientRequest::InitializeRequest(_),
            ..
        })) => return Err(Some(id)),
        Ok(ClientJsonRpcMessage::Request(JsonRpcRequest { id, request, .. })) => (
            id,
            crate::tasks::session_request(request, &bytes, || {
                session.handler.declared_tasks().is_some()
            }),
        ),
        Ok(answer) => {
            session.answered(&answer);
            return Ok(StatusCode::ACCEPTED.into_response());
        }
        Err(_) => return Err(None),
    };
    Ok(dispatch(session, parts, message).await)
}

/// Runs one request on the session's handler and answers it.
async fn dispatch(
    session: &Arc<InlineSession>,
    parts: axum::http::request::Parts,
    (id, mut request): (rmcp::model::RequestId, ClientRequest),
) -> Response {
    let key = id_key(&id);
    // Cancelled by the client only: at shutdown the answer is the
    // shutdown's error (crate::shutdown), as for rmcp's calls.
    let ct = CancellationToken::new();
    session.in_flight.lock().insert(key.clone(), ct.clone());
    let in_flight = InFlight {
        session: session.clone(),
        key,
    };
    let (outbox_tx, messages) = mpsc::channel(OUTBOX_QUEUE);
    let level = match crate::handler::calls::request_log_level(request.get_meta()) {
        Some(rank) => Arc::new(std::sync::atomic::AtomicUsize::new(rank)),
        None => session
            .handler
            .session_parts()
            .map(|(_, _, level)| level.clone())
            .unwrap_or_default(),
    };
    let meta = std::mem::take(request.get_meta_mut());
    let progress = meta.get_progress_token().map(|token| {
        Arc::new(OutboxProgress {
            token,
            outbox: outbox_tx.clone(),
        }) as Arc<dyn extpool_host::core::ProgressSink>
    });
    let client = InlineClient {
        session: session.clone(),
        outbox: outbox_tx,
        level,
    };
    let mut context = RequestContext::new(id.clone(), session.peer.clone());
    context.ct = ct;
    context.meta = meta;
    context.extensions = std::mem::take(request.extensions_mut());
    context.extensions.insert(parts);
    context.extensions.insert(InlineRelay {
        client: Arc::new(client),
        progress,
    });
    let handler = session.handler.clone();
    let call: Call = Box::pin(async move {
        let answer = match handler.handle_request(request, context).await {
            Ok(result) => ServerJsonRpcMessage::response(result, id),
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        };
        drop(in_flight);
        answer
    });
    let mut running = Running {
        call,
        outbox: Outbox { messages },
    };
    let first = match session.wait() {
        Wait::Grace(grace) => tokio::time::timeout(grace, running.first()).await.ok(),
        // Ready when first polled, or not at all (a timer's resolution
        // would let a quick call pass).
        Wait::None => futures::FutureExt::now_or_never(running.first()),
        Wait::Whole => Some(running.first().await),
    };
    match first {
        Some(First::Answer(answer)) if session.stateless => {
            with_status(json(&answer), stateless::status_of(&answer))
        }
        Some(First::Answer(answer)) => json(&answer),
        Some(First::Before(before)) => stream(session, Some(before), running),
        None => stream(session, None, running),
    }
}
