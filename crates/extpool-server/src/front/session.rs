//! One MCP session of the HTTP front end (or the stand-alone request of a
//! 2026-07-28 client, which has none): its handler, how its client is
//! reached outside a call's answer, and the requests answered now.
//!
//! A request is answered in the HTTP task that received it
//! ([`Session::answer`]): read once, dispatched to the session's
//! [`GatewayHandler`] there. A result that comes within the session's
//! wait ([`Session::wait`]) with nothing before it is answered as
//! `application/json`; otherwise the answer is an SSE stream
//! ([`super::replay`]), primed at once so a client whose connection
//! breaks resumes it, that carries what comes first — the call's
//! progress, an upstream's log messages, or its requests of the client
//! (sampling, elicitation), whose answers come back by POST and are taken
//! here ([`Session::answered`]) — and then the result.
//!
//! A request is cancelled by the client's `notifications/cancelled`
//! naming its id ([`Session::cancel`]), and when its session ends; one
//! answered as JSON also when its client goes away before the answer. At
//! the shutdown, the door answers what still runs ([`crate::shutdown`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::response::Response;
use parking_lot::Mutex;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta, RequestId, ServerJsonRpcMessage};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::running::{Call, First, InFlight, Outbox, OutboxProgress, Queued, Running, stream};
use crate::client_peer::{ClientPeer, Outbound};
use crate::handler::GatewayHandler;
use crate::handler::exchange::{Back, Exchange};

/// How long a request's answer may take to be answered whole, as JSON;
/// past it the answer becomes a stream (primed, so a client whose
/// connection breaks resumes it), as it does when anything comes first.
/// With a state store (replicas that take over each other's sessions) an
/// answer not ready at once is primed at once, so a client whose replica
/// dies mid-call always has a stream to resume on another.
const GRACE: std::time::Duration = std::time::Duration::from_millis(20);

/// How long a request's answer waits for what comes first of its call
/// before it is sent as a stream.
enum Wait {
    /// At most this long (a session's request).
    Grace(std::time::Duration),
    /// Not at all: only what is ready when first polled.
    None,
    /// Until it comes: a 2026-07-28 request's answer's HTTP status is its
    /// first message's ([`super::stateless::status_of`]).
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

/// A session of the front end: its handler, its client outside a call's
/// answer (none for a stand-alone request), and the requests in flight.
pub(crate) struct Session {
    pub(super) handler: GatewayHandler,
    /// How the session's client is reached outside a call's answer (its
    /// `GET` stream); `None` for a stand-alone 2026-07-28 request.
    outbound: Option<Arc<Outbound>>,
    /// Each request answered now, by its id as JSON text.
    pub(super) in_flight: Mutex<HashMap<String, CancellationToken>>,
    /// Each request sent to the client on a call's stream and not yet
    /// answered, by its id as JSON text.
    asked: Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>,
    /// Numbers the requests sent to the client.
    next_ask: AtomicU64,
    /// The answers made as streams, for a client that resumes one.
    pub(super) replays: crate::held::replay::Replays,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("in_flight", &self.in_flight.lock().len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The session of one stand-alone 2026-07-28 request: `handler`
    /// answers it, and nothing reaches its client but the answer.
    pub(super) fn of_request(handler: GatewayHandler) -> Arc<Self> {
        Self::new(handler, None)
    }

    /// A session of `handler` whose client is reached through `outbound`
    /// (`None`: a stand-alone request), with nothing in flight.
    pub(super) fn new(handler: GatewayHandler, outbound: Option<Arc<Outbound>>) -> Arc<Self> {
        let kept = handler.shared().front.kept_streams.clone();
        Arc::new(Session {
            handler,
            outbound,
            in_flight: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(0),
            replays: crate::held::replay::Replays::new(kept),
        })
    }

    /// Whether this is a stand-alone request's, not a session's.
    pub(super) fn stands_alone(&self) -> bool {
        self.outbound.is_none()
    }

    /// How long this session's answers wait for what comes first.
    /// A session's: [`GRACE`], or with a state store (replicas that take
    /// over each other's sessions) only an answer ready at once, so a
    /// client whose replica dies mid-call always has a stream to resume.
    fn wait(&self) -> Wait {
        if self.stands_alone() {
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

    /// How the session's client is reached outside a call's answer.
    pub(crate) fn outbound(&self) -> Option<&Arc<Outbound>> {
        self.outbound.as_ref()
    }

    /// What the client said at `initialize` (the version agreed on in it).
    pub(crate) fn client_info(&self) -> Option<Arc<rmcp::model::InitializeRequestParams>> {
        self.outbound.as_ref().map(|out| out.info.clone())
    }

    /// Ends the session: its `GET` stream ends, its calls in flight are
    /// cancelled, nothing more reaches its client.
    pub(crate) fn end(&self) {
        if let Some(outbound) = &self.outbound {
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

    /// Takes the client's answer to a request sent on a call's stream
    /// (also when nothing waits for it any more).
    pub(super) fn answered(&self, message: &ClientJsonRpcMessage) {
        let (id, answer) = match message {
            ClientJsonRpcMessage::Response(response) => (
                &response.id,
                serde_json::to_value(&response.result).map_err(|e| e.to_string()),
            ),
            ClientJsonRpcMessage::Error(error) => {
                let Some(id) = &error.id else { return };
                (
                    id,
                    Err(format!(
                        "the client answered with an error: {}",
                        error.error.message
                    )),
                )
            }
            _ => return,
        };
        if let Some(waiting) = self.asked.lock().remove(&id_key(id)) {
            let _ = waiting.send(answer);
        }
    }

    /// The request of a session (its `tasks/*` requests read as the
    /// gateway's task map takes them), from the `bytes` of its body.
    pub(super) fn request_of(&self, request: ClientRequest, bytes: &[u8]) -> ClientRequest {
        crate::tasks::session_request(request, bytes, || self.handler.declared_tasks().is_some())
    }

    /// Runs request `id` on the session's handler and answers it, for
    /// `caller` (resolved at the door) with the headers of `parts` (its
    /// HTTP request's).
    pub(super) async fn answer(
        self: &Arc<Self>,
        parts: axum::http::request::Parts,
        (id, mut request): (RequestId, ClientRequest),
        caller: crate::handler::caller::Caller,
    ) -> Response {
        let key = id_key(&id);
        // Cancelled by the client (or the session's end) only: at
        // shutdown the answer is the shutdown's error (crate::shutdown).
        let ct = CancellationToken::new();
        self.in_flight.lock().insert(key.clone(), ct.clone());
        let in_flight = InFlight {
            session: self.clone(),
            key,
        };
        let (outbox, outbox_tx) = Outbox::new(OUTBOX_QUEUE);
        let level = match crate::handler::calls::request_log_level(request.get_meta()) {
            Some(rank) => Arc::new(std::sync::atomic::AtomicUsize::new(rank)),
            None => self
                .handler
                .session_parts()
                .map(|(_, _, level)| level.clone())
                .unwrap_or_default(),
        };
        let malformed = self.stands_alone() && super::stateless::malformed(request.get_meta());
        let meta = std::mem::take(request.get_meta_mut());
        let progress = meta.get_progress_token().map(|token| {
            Arc::new(OutboxProgress {
                token,
                outbox: outbox_tx.clone(),
            }) as Arc<dyn extpool_host::core::ProgressSink>
        });
        let client = Client {
            session: self.clone(),
            outbox: outbox_tx,
            level,
        };
        let ex = Exchange {
            id: id.clone(),
            ct,
            meta,
            caller,
            span: parts
                .extensions
                .get::<crate::trace::RequestSpan>()
                .map(|kept| kept.0.clone()),
            headers: Some(Arc::new(parts.headers)),
            back: Back::Queue {
                client: Arc::new(client),
                progress,
            },
            session: self.client_info(),
            standalone: self.stands_alone(),
            read: Default::default(),
        };
        let handler = self.handler.clone();
        let call: Call = Box::pin(async move {
            let answer = match handler.dispatch(request, &ex).await {
                Ok(result) => ServerJsonRpcMessage::response(result, id),
                Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
            };
            drop(in_flight);
            answer
        });
        let mut running = Running { call, outbox };
        let first = match self.wait() {
            Wait::Grace(grace) => tokio::time::timeout(grace, running.first()).await.ok(),
            // Ready when first polled, or not at all (a timer's resolution
            // would let a quick call pass).
            Wait::None => futures::FutureExt::now_or_never(running.first()),
            Wait::Whole => Some(running.first().await),
        };
        // A plain JSON answer says a rate limit's refusal in its HTTP
        // status and headers too (crate::rate::answer).
        let over_http = crate::rate::answer::over_http;
        match first {
            Some(First::Answer(answer)) if self.stands_alone() => {
                let status = super::stateless::status_of(&answer, malformed);
                let json = super::running::with_status(super::running::json(&answer), status);
                over_http(json, &answer)
            }
            Some(First::Answer(answer)) => over_http(super::running::json(&answer), &answer),
            Some(First::Before(before)) => stream(self, Some(before), running),
            None => stream(self, None, running),
        }
    }
}

/// The client of a call answered here, as its upstream servers see it:
/// their requests (sampling, elicitation) and log messages go on the
/// call's stream, and the client's answers come back by POST
/// ([`Session::answered`]).
struct Client {
    session: Arc<Session>,
    outbox: mpsc::Sender<Queued>,
    /// The least severe log level the client wants (`logging/setLevel`).
    level: Arc<std::sync::atomic::AtomicUsize>,
}

/// A request sent to the client, forgotten when its call no longer waits.
struct Asked<'a> {
    session: &'a Session,
    key: String,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        self.session.asked.lock().remove(&self.key);
    }
}

#[async_trait::async_trait]
impl extpool_host::CallClient for Client {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let request = crate::handler::relay::server_request(method, params)?;
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
        crate::handler::relay::accepts(self.session.client_info().as_deref(), method)
    }

    fn session(&self) -> Option<Arc<dyn extpool_host::core::ClientSession>> {
        let outbound = self.session.outbound.clone()?;
        Some(Arc::new(crate::handler::relay::PeerSession(
            ClientPeer::Own(outbound),
        )))
    }

    fn log(&self, params: Value) {
        if !crate::handler::relay::wanted(&params, &self.level) {
            return;
        }
        let sent = Outbox::log(params)
            .is_some_and(|message| self.outbox.try_send(Box::new(message)).is_ok());
        if !sent {
            tracing::debug!("a log message was dropped: the client reads too slowly");
        }
    }
}

impl crate::held::live::HeldSession for Session {
    fn end(&self) {
        Session::end(self);
    }
}
