//! The client behind a call, as upstream servers see it through the host:
//! progress of the call goes back to the client's progress token, and what
//! a server asks while the call runs (sampling, elicitation) and its log
//! messages go to the client whose call caused them
//! ([`extpool_host::CallContext`]; the host picks the latest caller of the
//! connection the request came on). Log messages below the level the
//! client set (`logging/setLevel`) are not sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use extpool_host::core::ProgressSink;
use extpool_host::passthrough::log_level_rank;
use extpool_host::{CallClient, CallContext, ProgressUpdate};
use rmcp::model::{ProgressNotificationParam, ProgressToken, ServerRequest};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};

use crate::handler::exchange::Back;
use tokio::sync::mpsc;

/// How many log messages and progress updates of one call may wait for a
/// slow client before new ones are dropped.
const RELAY_QUEUE: usize = 256;

/// What a call answered over stdio sends its client before its
/// answer, on one queue so it reaches the client in the order it was sent.
enum Relayed {
    /// A `notifications/message`'s params.
    Log(Value),
    /// The call's progress, as the notification to the client's token.
    Progress(ProgressNotificationParam),
}

/// A client session, answering requests for the calls it makes and
/// receiving their log messages.
pub struct PeerClient {
    peer: Peer<RoleServer>,
    /// Log messages of the call, forwarded in order with its progress.
    logs: Option<mpsc::Sender<Relayed>>,
    /// The least severe level the client wants (a rank of
    /// [`extpool_host::passthrough::LOG_LEVELS`]).
    level: Arc<AtomicUsize>,
}

impl PeerClient {
    /// The client behind `peer`; log messages are dropped.
    pub fn new(peer: Peer<RoleServer>) -> Self {
        Self {
            peer,
            logs: None,
            level: Arc::new(AtomicUsize::new(0)),
        }
    }
}

/// An upstream's request of the client (`method`, `params` as MCP's
/// JSON) as the message the gateway sends its own client; `Err` says why
/// it cannot be relayed.
pub(crate) fn server_request(method: &str, params: Value) -> Result<ServerRequest, String> {
    serde_json::from_value(json!({"method": method, "params": params}))
        .map_err(|e| format!("cannot relay {method}: {e}"))
}

/// Whether a client that said `info` at `initialize` accepts server
/// request `method` (it declared the capability).
pub(crate) fn accepts(info: Option<&rmcp::model::InitializeRequestParams>, method: &str) -> bool {
    info.is_some_and(|info| declares(&info.capabilities, method))
}

pub(crate) use crate::wire::declares;

/// The capability a client declares to take server request `method`, as
/// the `requiredCapabilities` of a `-32021` error name it (`{"sampling":
/// {}}`); `None` for a method no capability covers.
pub(crate) fn capability_for(method: &str) -> Option<rmcp::model::ClientCapabilities> {
    let capability = match method {
        extpool_host::mcp::handler::SAMPLING => json!({"sampling": {}}),
        extpool_host::mcp::handler::ELICITATION => json!({"elicitation": {}}),
        extpool_host::mcp::handler::ELICITATION_URL => json!({"elicitation": {"url": {}}}),
        _ => return None,
    };
    serde_json::from_value(capability).ok()
}

/// The session of the client behind a peer, past any call: what a server
/// tells it later goes outside any call's answer (over HTTP on its
/// session's `GET` stream, which keeps what is sent before the client
/// opens it).
pub(crate) struct PeerSession(pub crate::client_peer::ClientPeer);

#[async_trait::async_trait]
impl extpool_host::core::ClientSession for PeerSession {
    async fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        let notification = rmcp::model::ServerNotification::CustomNotification(
            rmcp::model::CustomNotification::new(method, Some(params)),
        );
        self.0
            .notify(notification)
            .await
            .map_err(|e| format!("the client did not take {method}: {e}"))
    }
}

/// Whether a log message of `params` is at or above `level` (a rank of
/// [`extpool_host::passthrough::LOG_LEVELS`]), the least severe the client
/// wants.
pub(crate) fn wanted(params: &Value, level: &AtomicUsize) -> bool {
    let rank = params["level"]
        .as_str()
        .and_then(log_level_rank)
        .unwrap_or(0);
    rank >= level.load(Ordering::Relaxed)
}

#[async_trait::async_trait]
impl CallClient for PeerClient {
    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let request = server_request(method, params)?;
        let result = self
            .peer
            .send_request(request)
            .await
            .map_err(|e| format!("the client did not answer {method}: {e}"))?;
        serde_json::to_value(result)
            .map_err(|e| format!("cannot relay the answer to {method}: {e}"))
    }

    fn accepts(&self, method: &str) -> bool {
        accepts(self.peer.peer_info().as_deref(), method)
    }

    fn session(&self) -> Option<Arc<dyn extpool_host::core::ClientSession>> {
        Some(Arc::new(PeerSession(crate::client_peer::ClientPeer::Rmcp(
            self.peer.clone(),
        ))))
    }

    fn log(&self, params: Value) {
        let Some(logs) = &self.logs else { return };
        if !wanted(&params, &self.level) {
            return;
        }
        if logs.try_send(Relayed::Log(params)).is_err() {
            tracing::debug!("a log message was dropped: the client reads too slowly");
        }
    }
}

/// A 2026-07-28 request's ways to its client, for a call held across input
/// rounds ([`crate::input_rounds::Here`]), `call` being the request's
/// [`call_context`]: those of a request answered in the HTTP task; for
/// one answered over stdio, its client, and no progress.
pub(crate) fn here(
    ex: &crate::handler::exchange::Exchange,
    call: &CallContext,
) -> crate::input_rounds::Here {
    match &ex.back {
        Back::Queue { client, progress } => crate::input_rounds::Here {
            client: Some(client.clone()),
            progress: progress.clone(),
        },
        Back::Peer(_) => crate::input_rounds::Here {
            client: call.client().cloned(),
            progress: None,
        },
    }
}

/// The call context of a request: progress to the client's token (when it
/// sent one), requests and logs (of `level` and above) to the client. A
/// request answered in the HTTP task needs nothing more: its answer reads
/// the call's queue itself. One answered over stdio gets a task that
/// forwards logs and progress to its peer, in the order they were sent,
/// until every copy of the context is dropped: await it before answering,
/// so that nothing the server sent before its result follows the result.
pub(crate) fn call_context(
    ex: &crate::handler::exchange::Exchange,
    level: Arc<AtomicUsize>,
) -> (CallContext, Option<tokio::task::JoinHandle<()>>) {
    let peer = match &ex.back {
        Back::Queue { client, progress } => {
            let mut call = CallContext::new().with_client(client.clone());
            if let Some(progress) = progress {
                call = call.with_progress_sink(progress.clone());
            }
            return (call, None);
        }
        Back::Peer(peer) => peer,
    };
    let (tx, rx) = mpsc::channel(RELAY_QUEUE);
    let mut call = CallContext::new();
    if let Some(token) = ex.meta.get_progress_token() {
        call = call.with_progress_sink(Arc::new(PeerProgress {
            token,
            queue: tx.clone(),
        }));
    }
    let client = PeerClient {
        peer: peer.clone(),
        logs: Some(tx),
        level,
    };
    let forwarder = tokio::spawn(forward(peer.clone(), rx));
    (call.with_client(Arc::new(client)), Some(forwarder))
}

/// A call's progress, put on its queue to the client beside its log
/// messages; an update the queue has no room for is dropped.
struct PeerProgress {
    token: ProgressToken,
    queue: mpsc::Sender<Relayed>,
}

impl ProgressSink for PeerProgress {
    fn send(&self, update: ProgressUpdate) {
        let param = progress_param(&self.token, update);
        let _ = self.queue.try_send(Relayed::Progress(param));
    }

    fn is_open(&self) -> bool {
        !self.queue.is_closed()
    }
}

/// Sends the client what a call queued for it, in order, until the call
/// is done with the queue or the client is gone.
async fn forward(peer: Peer<RoleServer>, mut rx: mpsc::Receiver<Relayed>) {
    while let Some(relayed) = rx.recv().await {
        let sent = match relayed {
            Relayed::Log(params) => match log_param(params) {
                #[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still show it
                Some(params) => peer.notify_logging_message(params).await,
                None => continue,
            },
            Relayed::Progress(param) => peer.notify_progress(param).await,
        };
        if sent.is_err() {
            break;
        }
    }
}

/// A log message's params (MCP's JSON, as an upstream sent them) as the
/// notification's; `None` when they are not a log message's.
#[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still show it
pub(crate) fn log_param(params: Value) -> Option<rmcp::model::LoggingMessageNotificationParam> {
    serde_json::from_value(params).ok()
}

/// A call's progress `update` as the notification to the client's `token`.
pub(crate) fn progress_param(
    token: &ProgressToken,
    update: ProgressUpdate,
) -> ProgressNotificationParam {
    let mut param = ProgressNotificationParam::new(token.clone(), update.progress);
    param.total = update.total;
    param.message = update.message;
    param
}

/// The `input_required` result an upstream server answered (its JSON, as
/// the host passed it back), to be sent to the client as it is: the
/// client's retry, with its answers and the request state, reaches the same
/// server by the same tool name.
pub(crate) fn input_required(
    asked: Value,
) -> Result<rmcp::model::InputRequiredResult, rmcp::ErrorData> {
    serde_json::from_value(asked).map_err(|e| {
        rmcp::ErrorData::internal_error(
            format!("the server's input_required result is not valid: {e}"),
            None,
        )
    })
}
