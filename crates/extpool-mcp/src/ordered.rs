//! What a server sends before a response is handled before the response.
//!
//! rmcp hands every incoming notification to the handler in a task of its
//! own, while a response goes straight to the request waiting for it. So a
//! server that reports progress or logs a line and then answers could see
//! its answer reach the caller first, and the caller gone when the
//! notification is handled: the last progress update or log line of a call
//! was lost now and then.
//!
//! Two wrappers restore the server's order for the notifications that
//! belong to a request: [`OrderedTransport`] numbers each progress, log and
//! resource-update notification as it arrives and holds a response back
//! until every such notification received before it has been handled;
//! [`OrderedHandler`] handles each one after those numbered before it (the
//! tasks rmcp runs them in may start in another order) and marks it
//! handled when the handler returns. The holds are bounded ([`MAX_HOLD`])
//! so that a handler that never returns cannot stall the connection; no
//! handler here waits on the connection.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmcp::model::{GetExtensions, JsonRpcMessage, ServerNotification};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, Service, ServiceRole};
use rmcp::transport::Transport;
use tokio::sync::Notify;

use crate::direct::Direct;

/// Longest a response waits for the notifications before it.
pub const MAX_HOLD: Duration = Duration::from_secs(2);

/// The number of a tracked notification, carried in its extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seq(u64);

/// Tracked notifications not handled yet.
#[derive(Debug, Default)]
pub struct Order {
    state: Mutex<State>,
    handled: Notify,
}

#[derive(Debug, Default)]
struct State {
    next: u64,
    pending: BTreeSet<u64>,
}

impl Order {
    fn assign(&self) -> u64 {
        let mut state = self.state.lock();
        let seq = state.next;
        state.next += 1;
        state.pending.insert(seq);
        seq
    }

    fn done(&self, seq: u64) {
        self.state.lock().pending.remove(&seq);
        self.handled.notify_waiters();
    }

    /// The number the next tracked notification will get.
    fn barrier(&self) -> u64 {
        self.state.lock().next
    }

    fn clear_before(&self, barrier: u64) -> bool {
        self.state.lock().pending.range(..barrier).next().is_none()
    }

    /// Waits until every tracked notification numbered below `barrier` is
    /// handled (at most [`MAX_HOLD`]).
    async fn wait_before(&self, barrier: u64) {
        let wait = async {
            loop {
                let notified = self.handled.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.clear_before(barrier) {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(MAX_HOLD, wait).await.is_err() {
            tracing::warn!("a response waited {MAX_HOLD:?} for the notifications before it");
        }
    }
}

/// Whether the order of `notification` relative to responses matters:
/// progress, log lines and resource updates, when rmcp gives them to the
/// handler (not to a `subscriptions/listen` stream).
fn tracked(notification: &ServerNotification) -> bool {
    use rmcp::model::GetMeta;
    let kind = matches!(
        notification,
        ServerNotification::ProgressNotification(_)
            | ServerNotification::LoggingMessageNotification(_)
            | ServerNotification::ResourceUpdatedNotification(_)
    );
    kind && notification.get_meta().subscription_id().is_none()
}

/// A client transport that numbers tracked notifications and holds each
/// response until the notifications before it are handled.
pub struct OrderedTransport<T> {
    inner: T,
    order: Arc<Order>,
    /// A response taken from `inner`, waiting (kept here, so that rmcp
    /// dropping a `receive` future loses nothing).
    held: Option<(u64, Rx)>,
    /// Where the answers to direct calls go, on a connection that has them.
    direct: Option<Arc<Direct>>,
}

impl<T> OrderedTransport<T> {
    /// Wraps `inner`; `order` is shared with the [`OrderedHandler`].
    pub fn new(inner: T, order: Arc<Order>) -> Self {
        Self {
            inner,
            order,
            held: None,
            direct: None,
        }
    }

    /// Hands the answers to `direct`'s calls to them rather than to rmcp.
    pub(crate) fn with_direct(mut self, direct: Arc<Direct>) -> Self {
        self.direct = Some(direct);
        self
    }

    /// `message` for rmcp, unless it answers a direct call (then taken).
    fn pass(&self, message: Rx) -> Option<Rx> {
        match &self.direct {
            Some(direct) => direct.take(message),
            None => Some(message),
        }
    }
}

type Rx = rmcp::service::RxJsonRpcMessage<RoleClient>;

impl<T: Transport<RoleClient>> Transport<RoleClient> for OrderedTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<Rx> {
        loop {
            if self.held.is_none() {
                let Some(mut message) = self.inner.receive().await else {
                    if let Some(direct) = &self.direct {
                        direct.end();
                    }
                    return None;
                };
                match &mut message {
                    JsonRpcMessage::Notification(n) if tracked(&n.notification) => {
                        let seq = self.order.assign();
                        n.notification.extensions_mut().insert(Seq(seq));
                        return Some(message);
                    }
                    JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                        let barrier = self.order.barrier();
                        if self.order.clear_before(barrier) {
                            match self.pass(message) {
                                Some(message) => return Some(message),
                                None => continue,
                            }
                        }
                        self.held = Some((barrier, message));
                    }
                    _ => return Some(message),
                }
            }
            let barrier = self.held.as_ref().map_or(0, |(b, _)| *b);
            self.order.wait_before(barrier).await;
            if let Some(message) = self.held.take().and_then(|(_, m)| self.pass(m)) {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A client service that marks tracked notifications handled.
pub struct OrderedHandler<H> {
    inner: H,
    order: Arc<Order>,
}

impl<H> OrderedHandler<H> {
    /// Wraps `inner`; `order` is shared with the [`OrderedTransport`].
    pub fn new(inner: H, order: Arc<Order>) -> Self {
        Self { inner, order }
    }
}

impl<H: Service<RoleClient>> Service<RoleClient> for OrderedHandler<H> {
    fn handle_request(
        &self,
        request: <RoleClient as ServiceRole>::PeerReq,
        context: RequestContext<RoleClient>,
    ) -> impl Future<Output = Result<<RoleClient as ServiceRole>::Resp, rmcp::ErrorData>>
    + rmcp::service::MaybeSendFuture
    + '_ {
        self.inner.handle_request(request, context)
    }

    async fn handle_notification(
        &self,
        notification: <RoleClient as ServiceRole>::PeerNot,
        context: NotificationContext<RoleClient>,
    ) -> Result<(), rmcp::ErrorData> {
        /// Marks the notification handled even if the handler panics.
        struct Done<'a>(&'a Order, Option<Seq>);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                if let Some(Seq(seq)) = self.1 {
                    self.0.done(seq);
                }
            }
        }
        let seq = context.extensions.get::<Seq>().copied();
        let _done = Done(&self.order, seq);
        // rmcp handles each notification in a task of its own, which may
        // run before the one of the notification before it (a log message
        // and the progress after it would swap): a tracked one waits for
        // those before it, whose handlers return at once.
        if let Some(Seq(seq)) = seq
            && !self.order.clear_before(seq)
        {
            self.order.wait_before(seq).await;
        }
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> <RoleClient as ServiceRole>::Info {
        self.inner.get_info()
    }

    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_ends_when_the_notifications_before_it_are_handled() {
        let order = Arc::new(Order::default());
        let first = order.assign();
        let barrier = order.barrier();
        let later = order.assign();
        assert!(!order.clear_before(barrier));
        let waiter = {
            let order = order.clone();
            tokio::spawn(async move { order.wait_before(barrier).await })
        };
        // A notification after the barrier does not matter.
        order.done(later);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        order.done(first);
        tokio::time::timeout(MAX_HOLD / 2, waiter)
            .await
            .expect("released before the bound")
            .expect("joined");
        assert!(order.clear_before(order.barrier()));
    }
}
