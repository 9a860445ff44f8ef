//! How the gateway reaches one session-era client outside a call's
//! answer: a list change, a resource update, a task's status, a request
//! past any call. A stdio client is reached through the rmcp [`Peer`] of
//! the stdio service; a session of the HTTP front end
//! through its [`Outbound`]: what it is sent goes on its `GET` stream
//! while one is open, and waits for one (a bounded few) while none is,
//! so what is sent before its client opens that stream is not lost; a
//! 2026-07-28 client's `subscriptions/listen` stream through its
//! listener.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use rmcp::RoleServer;
use rmcp::model::{
    GetMeta, InitializeRequestParams, RequestId, ServerJsonRpcMessage, ServerNotification,
    SubscriptionFilter,
};
use rmcp::service::Peer;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Most messages kept for a session whose `GET` stream is not open; past
/// it the oldest go (a client that never listens loses only notices,
/// which it can make up for by listing again).
pub(crate) const MAX_WAITING: usize = 64;

/// How many messages a `GET` stream holds for a slow client before new
/// ones wait in the session's queue instead.
const STREAM_QUEUE: usize = 64;

/// One session-era client, reached outside any call's answer.
#[derive(Clone)]
pub(crate) enum ClientPeer {
    /// The stdio client, through rmcp's stdio service.
    Rmcp(Peer<RoleServer>),
    /// A session of the HTTP front end.
    Own(Arc<Outbound>),
    /// A 2026-07-28 client's `subscriptions/listen` stream (no session):
    /// what it is sent carries the subscription's id.
    Listener(Arc<Listener>),
}

impl std::fmt::Debug for ClientPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rmcp(_) => f.write_str("ClientPeer::Rmcp"),
            Self::Own(_) => f.write_str("ClientPeer::Own"),
            Self::Listener(_) => f.write_str("ClientPeer::Listener"),
        }
    }
}

impl ClientPeer {
    /// What the client said of itself at `initialize`.
    pub(crate) fn info(&self) -> Option<Arc<InitializeRequestParams>> {
        match self {
            Self::Rmcp(peer) => peer.peer_info(),
            Self::Own(out) => Some(out.info.clone()),
            Self::Listener(_) => None,
        }
    }

    /// Sends `notification` to the client; `Err` says why it could not be.
    pub(crate) async fn notify(&self, notification: ServerNotification) -> Result<(), String> {
        match self {
            Self::Rmcp(peer) => peer
                .send_notification(notification)
                .await
                .map_err(|e| e.to_string()),
            Self::Own(out) => out.send(ServerJsonRpcMessage::notification(notification)),
            Self::Listener(listener) => listener.send(notification),
        }
    }

    /// Whether the client's session ended (nothing sent reaches it).
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Self::Rmcp(peer) => peer.is_transport_closed(),
            Self::Own(out) => out.closed.is_cancelled(),
            Self::Listener(listener) => listener.is_closed(),
        }
    }
}

/// What an own session sends its client outside a call's answer.
pub(crate) struct Outbound {
    /// The client's `initialize` parameters.
    pub(crate) info: Arc<InitializeRequestParams>,
    state: Mutex<OutState>,
    /// Cancelled when the session ends.
    closed: CancellationToken,
}

#[derive(Default)]
struct OutState {
    /// The open `GET` stream, if any.
    stream: Option<mpsc::Sender<ServerJsonRpcMessage>>,
    /// Sent while no stream was open (at most [`MAX_WAITING`]).
    waiting: VecDeque<ServerJsonRpcMessage>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("closed", &self.closed.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Outbound {
    /// The outbound side of a session whose client sent `info`.
    pub(crate) fn new(info: InitializeRequestParams) -> Arc<Self> {
        Arc::new(Self {
            info: Arc::new(info),
            state: Mutex::new(OutState::default()),
            closed: CancellationToken::new(),
        })
    }

    /// Sends `message` on the `GET` stream, or keeps it for the next one.
    pub(crate) fn send(&self, message: ServerJsonRpcMessage) -> Result<(), String> {
        if self.closed.is_cancelled() {
            return Err("the session ended".into());
        }
        let mut state = self.state.lock();
        let message = match &state.stream {
            None => message,
            Some(tx) => match tx.try_send(message) {
                Ok(()) => return Ok(()),
                Err(mpsc::error::TrySendError::Full(message)) => message,
                Err(mpsc::error::TrySendError::Closed(message)) => {
                    state.stream = None;
                    message
                }
            },
        };
        state.keep(message);
        Ok(())
    }

    /// Opens the `GET` stream: what waited comes first. `None` while
    /// another stream of the session is open (one at a time, as rmcp's).
    pub(crate) fn open_stream(&self) -> Option<mpsc::Receiver<ServerJsonRpcMessage>> {
        let mut state = self.state.lock();
        if state.stream.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_QUEUE.max(state.waiting.len()));
        for message in state.waiting.drain(..) {
            let _ = tx.try_send(message);
        }
        state.waiting.shrink_to_fit();
        state.stream = Some(tx);
        Some(rx)
    }

    /// Ends the session: its stream ends, nothing more is sent.
    pub(crate) fn close(&self) {
        self.closed.cancel();
        let mut state = self.state.lock();
        state.stream = None;
        state.waiting = VecDeque::new();
    }

    /// Cancelled when the session ends.
    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.closed
    }
}

impl OutState {
    fn keep(&mut self, message: ServerJsonRpcMessage) {
        if self.waiting.len() >= MAX_WAITING {
            self.waiting.pop_front();
        }
        self.waiting.push_back(message);
    }
}

/// A 2026-07-28 client's `subscriptions/listen` stream that the gateway
/// answers itself (the HTTP front end): what it accepted, and the stream.
pub(crate) struct Listener {
    id: RequestId,
    accepted: SubscriptionFilter,
    stream: mpsc::Sender<ServerJsonRpcMessage>,
}

impl Listener {
    /// The listener of subscription `id` (its request's id), which
    /// accepted `accepted`, writing to `stream`.
    pub(crate) fn new(
        id: RequestId,
        accepted: SubscriptionFilter,
        stream: mpsc::Sender<ServerJsonRpcMessage>,
    ) -> Self {
        Self {
            id,
            accepted,
            stream,
        }
    }

    /// What its client accepted to be told.
    pub(crate) fn accepted(&self) -> &SubscriptionFilter {
        &self.accepted
    }

    /// Sends `notification` on its stream, under its id; `Err` when the
    /// stream has no room or its client went away.
    pub(crate) fn send(&self, mut notification: ServerNotification) -> Result<(), String> {
        notification
            .get_meta_mut()
            .set_subscription_id(self.id.clone());
        self.stream
            .try_send(ServerJsonRpcMessage::notification(notification))
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => "the listen stream is full".to_owned(),
                mpsc::error::TrySendError::Closed(_) => "the listen stream ended".to_owned(),
            })
    }

    /// Whether its client went away.
    pub(crate) fn is_closed(&self) -> bool {
        self.stream.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ServerNotification, ToolListChangedNotification};

    fn info() -> InitializeRequestParams {
        serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}
        }))
        .expect("params")
    }

    fn changed() -> ServerNotification {
        ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default())
    }

    #[tokio::test]
    async fn what_is_sent_before_the_stream_opens_comes_first_and_is_bounded() {
        let out = Outbound::new(info());
        let peer = ClientPeer::Own(out.clone());
        for _ in 0..MAX_WAITING + 5 {
            peer.notify(changed()).await.expect("kept");
        }
        let mut rx = out.open_stream().expect("the first stream");
        assert!(out.open_stream().is_none(), "one stream at a time");
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, MAX_WAITING);
        peer.notify(changed()).await.expect("sent");
        assert!(rx.try_recv().is_ok(), "sent on the open stream");
        drop(rx);
        peer.notify(changed()).await.expect("kept again");
        let mut rx = out.open_stream().expect("a stream after the last closed");
        assert!(rx.try_recv().is_ok(), "what waited comes on the new stream");
        out.close();
        assert!(peer.is_closed());
        assert!(peer.notify(changed()).await.is_err());
        assert!(
            rx.recv().await.is_none(),
            "the stream ends with the session"
        );
    }
}
