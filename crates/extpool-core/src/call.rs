//! The context of one tool call as it travels from a front end (the
//! gateway, an agent runtime) through the catalog to the capability that
//! serves it: where progress goes, and which client answers the requests a
//! server makes while the call runs (sampling, elicitation) and receives
//! its log messages, and who the call is for (a gateway's principal, by
//! its label).
//!
//! The context rides in a task-local ([`CallContext::scope`]), so the
//! catalog and the registry, which only route the call, need not know
//! about it; an MCP capability reads [`CallContext::current`] when it sends
//! the call upstream. Outside a scope there is no context and calls behave
//! as before (no progress, requests declined).

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

/// One progress update of a call in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// Progress so far (increases with every update).
    pub progress: f64,
    /// Total, when the server knows it.
    pub total: Option<f64>,
    /// A human-readable message, if any.
    pub message: Option<String>,
}

/// The client behind a call: answers what a server asks while the call
/// runs, and receives its log messages. Methods and params are MCP's own
/// JSON (`sampling/createMessage`, `elicitation/create`), so this crate
/// stays free of any protocol library.
#[async_trait::async_trait]
pub trait CallClient: Send + Sync {
    /// Sends request `method` with `params` to the client and returns its
    /// result, or a message saying why it could not.
    async fn request(&self, method: &str, params: Value) -> Result<Value, String>;

    /// Whether the client accepts `method` (it declared the capability).
    fn accepts(&self, method: &str) -> bool;

    /// Forwards a `notifications/message` (its params) to the client.
    fn log(&self, params: Value);

    /// A server asked `method` during this client's call and was refused:
    /// the client does not take it ([`CallClient::accepts`]). A front end
    /// whose protocol names what the client lacks (MCP 2026-07-28's
    /// `-32021`) keeps it, to say so if the call then fails.
    fn declined(&self, method: &str) {
        let _ = method;
    }

    /// The client's session as it outlives the call, for what a server
    /// tells the client after the call that asked is over
    /// (`notifications/elicitation/complete` of a URL-mode elicitation);
    /// `None` for a client without one. It holds nothing of the call, so
    /// keeping it never keeps the call's relays open.
    fn session(&self) -> Option<Arc<dyn ClientSession>> {
        None
    }
}

/// The session of a call's client, past the call: see
/// [`CallClient::session`].
#[async_trait::async_trait]
pub trait ClientSession: Send + Sync {
    /// Sends notification `method` with `params` to the client, outside
    /// any call's answer; `Err` says why it could not.
    async fn notify(&self, method: &str, params: Value) -> Result<(), String>;
}

/// One round of a call in the stateless era (MCP 2026-07-28, SEP-2322):
/// a server that needs the client's input answers `input_required` instead
/// of asking by request; the client answers the questions and retries the
/// call with its `inputResponses` and the `requestState` it was given.
///
/// A front end whose client takes such rounds (the gateway, for a
/// 2026-07-28 client) puts one in the call's context: the client's answers
/// go to the server with the call, and the server's next questions come
/// back through [`InputRound::ask`] whole, to be passed on as they are.
/// The JSON is MCP's own, so this crate stays free of any protocol library.
#[derive(Debug, Default)]
pub struct InputRound {
    /// `inputResponses` of the client's retry (an object keyed like the
    /// server's `inputRequests`), if any.
    pub responses: Option<serde_json::Map<String, Value>>,
    /// `requestState` of the client's retry, if any (opaque, passed on
    /// unchanged).
    pub request_state: Option<String>,
    asked: std::sync::Mutex<Option<Value>>,
}

impl InputRound {
    /// A round with what the client sent along with its call.
    pub fn new(
        responses: Option<serde_json::Map<String, Value>>,
        request_state: Option<String>,
    ) -> Self {
        Self {
            responses,
            request_state,
            asked: std::sync::Mutex::new(None),
        }
    }

    /// Keeps the server's `input_required` result (its JSON), to be passed
    /// back to the client instead of a result.
    pub fn ask(&self, result: Value) {
        *self
            .asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
    }

    /// The server's `input_required` result, if the server asked.
    pub fn asked(&self) -> Option<Value> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Where a call's progress goes: a channel, or a sink of the front end's
/// own (one whose receiver changes while the call runs, as a call held
/// across a gateway's input rounds does).
pub trait ProgressSink: Send + Sync {
    /// Takes `update`, or drops it when nobody can take it now (never
    /// queued without bound).
    fn send(&self, update: ProgressUpdate);
    /// Whether updates can still be taken.
    fn is_open(&self) -> bool;
}

impl ProgressSink for mpsc::Sender<ProgressUpdate> {
    fn send(&self, update: ProgressUpdate) {
        let _ = self.try_send(update);
    }

    fn is_open(&self) -> bool {
        !self.is_closed()
    }
}

/// Where a call's progress and server requests go, and who made it.
#[derive(Clone, Default)]
pub struct CallContext {
    progress: Option<Arc<dyn ProgressSink>>,
    client: Option<Arc<dyn CallClient>>,
    input: Option<Arc<InputRound>>,
    caller: Option<Arc<str>>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("progress", &self.progress.is_some())
            .field("client", &self.client.is_some())
            .field("input", &self.input.is_some())
            .field("caller", &self.caller)
            .finish()
    }
}

tokio::task_local! {
    static CURRENT: CallContext;
}

impl CallContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Progress of the call goes to `tx`; updates that do not fit (the
    /// receiver is slow) are dropped, never queued without bound.
    pub fn with_progress(self, tx: mpsc::Sender<ProgressUpdate>) -> Self {
        self.with_progress_sink(Arc::new(tx))
    }

    /// Progress of the call goes to `sink`.
    pub fn with_progress_sink(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Requests and logs of servers during the call go to `client`.
    pub fn with_client(mut self, client: Arc<dyn CallClient>) -> Self {
        self.client = Some(client);
        self
    }

    /// The client takes `input_required` rounds: `round` carries its
    /// answers to the server and the server's next questions back.
    pub fn with_input(mut self, round: Arc<InputRound>) -> Self {
        self.input = Some(round);
        self
    }

    /// The call is made for `caller`: how the front end names who is
    /// calling (a gateway's principal label, `alice@https://idp.example`),
    /// for what the host tells others about the call (its guardrail
    /// webhook). Front ends that know no caller leave it unset.
    pub fn with_caller(mut self, caller: impl Into<Arc<str>>) -> Self {
        self.caller = Some(caller.into());
        self
    }

    /// Who the call is made for, when the front end said
    /// ([`CallContext::with_caller`]).
    pub fn caller(&self) -> Option<&str> {
        self.caller.as_deref()
    }

    /// The call's input round, when its client takes `input_required`.
    pub fn input(&self) -> Option<&Arc<InputRound>> {
        self.input.as_ref()
    }

    /// Runs `fut` with this context as the current one.
    pub async fn scope<F: Future>(self, fut: F) -> F::Output {
        CURRENT.scope(self, fut).await
    }

    /// The context of the call running on this task, if any.
    pub fn current() -> Option<CallContext> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// Whether anyone listens to progress.
    pub fn wants_progress(&self) -> bool {
        self.progress.as_ref().is_some_and(|sink| sink.is_open())
    }

    /// Reports progress (dropped when the receiver is full or gone).
    pub fn progress(&self, update: ProgressUpdate) {
        if let Some(sink) = &self.progress {
            sink.send(update);
        }
    }

    /// The client behind the call, if it can be asked things.
    pub fn client(&self) -> Option<&Arc<dyn CallClient>> {
        self.client.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_context_is_current_inside_its_scope_only() {
        assert!(CallContext::current().is_none());
        let (tx, mut rx) = mpsc::channel(1);
        CallContext::new()
            .with_progress(tx)
            .scope(async {
                let ctx = CallContext::current().expect("inside the scope");
                assert!(ctx.wants_progress());
                for progress in [1.0, 2.0] {
                    ctx.progress(ProgressUpdate {
                        progress,
                        total: None,
                        message: None,
                    });
                }
            })
            .await;
        // The second update did not fit and was dropped, not queued.
        assert_eq!(rx.recv().await.map(|u| u.progress), Some(1.0));
        assert!(rx.recv().await.is_none());
        assert!(CallContext::current().is_none());
    }

    #[tokio::test]
    async fn the_caller_travels_with_the_call() {
        let seen = CallContext::new()
            .with_caller("alice@https://idp.example")
            .scope(async { CallContext::current().and_then(|c| c.caller().map(str::to_owned)) })
            .await;
        assert_eq!(seen.as_deref(), Some("alice@https://idp.example"));
        assert_eq!(CallContext::new().caller(), None);
    }
}
