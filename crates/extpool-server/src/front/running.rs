//! A request's call as it is answered in the HTTP task: what it sends
//! before its answer ([`Outbox`]), what comes first ([`Running::first`]),
//! and the answer itself, as `application/json` ([`json`]) or as a stream
//! kept for resumes ([`stream`]).

use std::pin::Pin;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use extpool_host::ProgressUpdate;
use extpool_host::core::ProgressSink;
use rmcp::model::{ProgressToken, ServerJsonRpcMessage, ServerNotification};
use serde_json::Value;
use tokio::sync::mpsc;

use super::session::Session;

/// The call of a request answered here, ending in its answer.
pub(super) type Call = Pin<Box<dyn Future<Output = ServerJsonRpcMessage> + Send>>;

/// A request's place in its session's requests in flight, given up when
/// the call ends or is dropped.
pub(super) struct InFlight {
    pub(super) session: Arc<Session>,
    pub(super) key: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.session.in_flight.lock().remove(&self.key);
    }
}

/// A message on a call's [`Outbox`], boxed: a queue allocates room for
/// 32 of its entries when it is made, and every call has one while most
/// send nothing before their answer (32 messages are 12 KB, 32 boxes 256
/// bytes).
pub(super) type Queued = Box<ServerJsonRpcMessage>;

/// What a call sends its client before its answer: its servers' requests
/// and log messages and, when the client gave a progress token, progress
/// ([`OutboxProgress`]), on one queue, so they reach the client in the order
/// they were sent.
///
/// The queue stays open while the outbox lives (it keeps a sender of its
/// own, dropped after its receiver, which forgets the waiting task's waker
/// when it drops): so the queue's end wakes nobody. Were the call's client
/// the last sender, its drop, as the call ends, would wake the HTTP task
/// that is writing the call's answer, and the runtime would run that task
/// once more for nothing and wake another worker to share the work — on
/// every call.
pub(super) struct Outbox {
    messages: mpsc::Receiver<Queued>,
    /// The queue's own sender, dropped after `messages` (fields drop in
    /// order): the call's senders are never its last.
    _open: mpsc::Sender<Queued>,
}

impl Outbox {
    /// An outbox of at most `capacity` messages waiting, and the sender
    /// that the call's client and progress send on.
    pub(super) fn new(capacity: usize) -> (Self, mpsc::Sender<Queued>) {
        let (tx, messages) = mpsc::channel(capacity);
        let outbox = Self {
            messages,
            _open: tx.clone(),
        };
        (outbox, tx)
    }

    #[allow(deprecated)] // logging (SEP-2577) is deprecated but clients still show it
    pub(super) fn log(params: Value) -> Option<ServerJsonRpcMessage> {
        let params = crate::handler::relay::log_param(params)?;
        Some(ServerJsonRpcMessage::notification(
            ServerNotification::LoggingMessageNotification(rmcp::model::Notification::new(params)),
        ))
    }

    /// A message already waiting, if any.
    fn waiting(&mut self) -> Option<ServerJsonRpcMessage> {
        self.messages.try_recv().ok().map(|message| *message)
    }

    /// The next message (the call's answer ends the wait).
    async fn next(&mut self) -> ServerJsonRpcMessage {
        match self.messages.recv().await {
            Some(message) => *message,
            // The outbox's own sender keeps the queue open.
            None => std::future::pending().await,
        }
    }
}

/// A call's progress, as notifications to the client's token on the call's
/// outbox; an update the outbox has no room for is dropped.
pub(super) struct OutboxProgress {
    pub(super) token: ProgressToken,
    pub(super) outbox: mpsc::Sender<Queued>,
}

impl ProgressSink for OutboxProgress {
    fn send(&self, update: ProgressUpdate) {
        let param = crate::handler::relay::progress_param(&self.token, update);
        let message = ServerJsonRpcMessage::notification(ServerNotification::ProgressNotification(
            rmcp::model::Notification::new(param),
        ));
        let _ = self.outbox.try_send(Box::new(message));
    }

    fn is_open(&self) -> bool {
        !self.outbox.is_closed()
    }
}

/// A request's call and what it sends before its answer.
pub(super) struct Running {
    pub(super) call: Call,
    pub(super) outbox: Outbox,
}

/// What came first of a call.
pub(super) enum First {
    /// Its answer, nothing before it.
    Answer(ServerJsonRpcMessage),
    /// A message that precedes its answer.
    Before(ServerJsonRpcMessage),
}

impl Running {
    pub(super) async fn first(&mut self) -> First {
        tokio::select! {
            biased;
            message = self.outbox.next() => First::Before(message),
            answer = &mut self.call => match self.outbox.waiting() {
                // Sent before the answer, found with it: it goes first.
                Some(message) => {
                    self.call = Box::pin(std::future::ready(answer));
                    First::Before(message)
                }
                None => First::Answer(answer),
            },
        }
    }
}

/// `response` with HTTP status `status`.
pub(super) fn with_status(mut response: Response, status: StatusCode) -> Response {
    if response.status() == StatusCode::OK {
        *response.status_mut() = status;
    }
    response
}

/// The answer as `application/json`.
pub(crate) fn json(answer: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(answer) {
        Ok(body) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the gateway could not write its answer: {e}\n"),
        )
            .into_response(),
    }
}

/// The answer as a stream kept for resumes ([`super::replay`]): the priming
/// event, `before` (what came first, if anything), what else the call
/// sends, then its answer. The call goes on in a task of its own, so a
/// client whose connection breaks finds the rest when it resumes; a
/// 2026-07-28 request's, which cannot be resumed, is cancelled then.
pub(super) fn stream(
    session: &Arc<Session>,
    before: Option<ServerJsonRpcMessage>,
    mut running: Running,
) -> Response {
    let replay = session.replays.open();
    if let Some(before) = &before {
        replay.message(before, false);
    }
    let writer = replay.clone();
    let call = async move {
        loop {
            tokio::select! {
                biased;
                message = running.outbox.next() => writer.message(&message, false),
                answer = &mut running.call => {
                    while let Some(message) = running.outbox.waiting() {
                        writer.message(&message, false);
                    }
                    writer.message(&answer, true);
                    break;
                }
            }
        }
    };
    // The request's span goes on with the call, so what the call does
    // upstream stays a child of it.
    let task = tokio::spawn(tracing::Instrument::in_current_span(call));
    let response = replay.answer(0);
    if !session.stands_alone() {
        return response;
    }
    // A 2026-07-28 request's stream cannot be resumed: its call ends with
    // it, when its client goes away.
    holding(response, AbortOnDrop(task))
}

/// `response` with `guard` kept by its body: dropped when the body is (its
/// client went away, or it ended).
pub(super) fn holding<G: Send + 'static>(response: Response, guard: G) -> Response {
    let (parts, body) = response.into_parts();
    let body = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _ = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

pub(crate) use crate::wire::AbortOnDrop;

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Wake, Waker};

    use super::*;

    /// A waker that counts its wakes.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn log_message() -> Queued {
        Box::new(Outbox::log(serde_json::json!({"level": "info", "data": "a line"})).unwrap())
    }

    /// A waker that counts its wakes, and the count.
    fn counting_waker() -> (Waker, Arc<Wakes>) {
        let wakes = Arc::new(Wakes::default());
        (Waker::from(wakes.clone()), wakes)
    }

    /// Waits on `outbox` once, as the HTTP task does while the call runs.
    fn wait_on(outbox: &mut Outbox, cx: &mut Context<'_>) -> std::task::Poll<ServerJsonRpcMessage> {
        std::pin::pin!(outbox.next()).poll(cx)
    }

    #[test]
    fn a_call_ending_and_its_outbox_dropped_wake_nobody() {
        let (waker, wakes) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let (mut outbox, client) = Outbox::new(4);
        let progress = client.clone();
        assert!(wait_on(&mut outbox, &mut cx).is_pending());
        // The call ends: its client and progress go with it, then the
        // answer is written and the outbox dropped.
        drop(client);
        drop(progress);
        assert!(wait_on(&mut outbox, &mut cx).is_pending(), "still open");
        drop(outbox);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_message_sent_while_the_task_waits_wakes_it_and_comes_next() {
        let (waker, wakes) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let (mut outbox, client) = Outbox::new(4);
        assert!(wait_on(&mut outbox, &mut cx).is_pending());
        client.try_send(log_message()).unwrap();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        let std::task::Poll::Ready(message) = wait_on(&mut outbox, &mut cx) else {
            panic!("the message is waiting");
        };
        assert!(serde_json::to_string(&message).unwrap().contains("a line"));
        assert!(outbox.waiting().is_none());
    }
}
