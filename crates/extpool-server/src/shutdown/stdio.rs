//! `extpool serve --stdio` under the shutdown path: a transport around
//! stdin and stdout that knows the client's requests in flight. Once the
//! shutdown begins, a new request is answered at once with the refusal
//! (the client's cancellations and answers still pass), and the transport
//! ends as soon as no request is in flight; when requests are cancelled,
//! each one still unanswered gets the shutdown error before it ends.
//! Only one client is served, so its requests in flight are bounded as a
//! session's over HTTP ([`crate::wire::MAX_REQUESTS_IN_FLIGHT`]).

use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use rmcp::model::{ClientNotification, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio_util::sync::CancellationToken;

/// A server transport that answers for its requests in flight when the
/// gateway shuts down.
pub(crate) struct Draining<T> {
    inner: T,
    /// The client's requests not answered yet.
    pending: HashSet<RequestId>,
    /// Requests this transport answered itself: the handler's own answer,
    /// should it come later, is not sent as a second one.
    answered: HashSet<RequestId>,
    draining: CancellationToken,
    stop: CancellationToken,
    grace: Duration,
    /// Answers this transport sends itself, until written.
    outgoing: FuturesUnordered<BoxFuture<'static, ()>>,
    /// No message is taken any more.
    ended: bool,
}

impl<T> Draining<T>
where
    T: Transport<RoleServer> + 'static,
{
    /// `inner` under the shutdown of `draining` (stop taking requests) and
    /// `stop` (cancel those in flight, which had `grace`).
    pub(crate) fn new(
        inner: T,
        draining: CancellationToken,
        stop: CancellationToken,
        grace: Duration,
    ) -> Self {
        Self {
            inner,
            pending: HashSet::new(),
            answered: HashSet::new(),
            draining,
            stop,
            grace,
            outgoing: FuturesUnordered::new(),
            ended: false,
        }
    }

    /// Sends request `id` the error `message` (written in the background,
    /// before the transport ends).
    fn answer(&mut self, id: RequestId, message: String) {
        let error = ErrorData::new(ErrorCode(super::SHUTTING_DOWN), message, None);
        let sent = self
            .inner
            .send(JsonRpcMessage::error(error, Some(id.clone())));
        self.answered.insert(id);
        self.outgoing.push(Box::pin(async move {
            if let Err(e) = sent.await {
                tracing::debug!("cannot write a shutdown answer to stdout: {e}");
            }
        }));
    }

    /// What becomes of a message from the client: a request is counted in
    /// flight, or answered here (`None`) when the gateway takes no more.
    fn admit(
        &mut self,
        message: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        match &message {
            JsonRpcMessage::Request(request) => {
                let id = request.id.clone();
                if self.draining.is_cancelled() {
                    self.answer(id, super::REFUSED.to_owned());
                    return None;
                }
                if self.pending.len() >= crate::wire::MAX_REQUESTS_IN_FLIGHT {
                    self.answer(id, crate::wire::too_many_requests());
                    return None;
                }
                self.pending.insert(id);
            }
            JsonRpcMessage::Notification(notification) => {
                // A cancelled request gets no answer: it is no longer waited on.
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.pending.remove(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        Some(message)
    }
}

impl<T> Transport<RoleServer> for Draining<T>
where
    T: Transport<RoleServer> + 'static,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let id = match &item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        if let Some(id) = id {
            self.pending.remove(id);
            if self.answered.remove(id) {
                return futures::future::Either::Left(std::future::ready(Ok(())));
            }
        }
        futures::future::Either::Right(self.inner.send(item))
    }

    /// The client's next message; `None` once the client closed stdin, or
    /// the shutdown left nothing in flight (or cancelled what was). State
    /// lives in `self`, so a receive dropped unfinished loses nothing.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.stop.is_cancelled() && !self.ended {
                let message = super::cancelled_message(self.grace);
                for id in std::mem::take(&mut self.pending) {
                    self.answer(id, message.clone());
                }
                self.ended = true;
            }
            if self.draining.is_cancelled() && self.pending.is_empty() {
                self.ended = true;
            }
            if self.ended {
                while self.outgoing.next().await.is_some() {}
                return None;
            }
            let draining = self.draining.is_cancelled();
            let message = tokio::select! {
                message = self.inner.receive() => message,
                Some(()) = self.outgoing.next(), if !self.outgoing.is_empty() => continue,
                () = self.draining.cancelled(), if !draining => continue,
                () = self.stop.cancelled() => continue,
            };
            let Some(message) = message else {
                self.ended = true;
                continue;
            };
            if let Some(message) = self.admit(message) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        while self.outgoing.next().await.is_some() {}
        self.inner.close().await
    }
}
