//! A 2026-07-28 client's `subscriptions/listen`, answered in the HTTP task
//! that received it, as its other requests are (over stdio, on its
//! connection: [`open`]): the stream acknowledges the kinds of
//! notification it will carry (those asked for that the gateway
//! declares, [`accepted`]), then carries each list
//! change of those kinds and each update of the resources it subscribed
//! to, with the subscription's id in its `_meta`, until the client goes
//! away or the gateway shuts down (the stream ends: [`crate::shutdown`]).
//! A comment is sent when it has been quiet for a while, as on a session's
//! `GET` stream.
//!
//! Its resources are subscribed to as a session's are
//! ([`crate::subscriptions`]: upstream once per URI, at most
//! [`MAX_PER_SESSION`] a stream); one that cannot be
//! (no server has it, its server refused) is left out of the
//! acknowledgment. When the stream ends they are unsubscribed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::response::Response;
use rmcp::model::{
    NotificationMetaObject, RequestId, ServerJsonRpcMessage, ServerNotification,
    SubscriptionFilter, SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequest,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::client_peer::ClientPeer;
use crate::client_peer::Listener;
use crate::handler::GatewayHandler;
use crate::shared::Shared;
use crate::subscriptions::MAX_PER_SESSION;

/// How many notifications wait for one slow listener; past it new ones
/// are dropped (a list change told again says nothing new: the client
/// lists again on the next).
const LISTEN_QUEUE: usize = 64;

/// A listen stream being served: what it carries (its acknowledgment
/// first), and what unsubscribes its resources when dropped.
pub(crate) struct Listening {
    /// Its messages, each with the subscription's id.
    pub messages: mpsc::Receiver<ServerJsonRpcMessage>,
    /// Dropped when the stream ends.
    pub guard: Option<Unsubscribe>,
}

/// Opens the stream of `request` (of id `id`), its listener kept by
/// `handler`'s notifier: over HTTP, an SSE answer ([`serve`]); over stdio,
/// notifications on the connection.
pub(crate) async fn open(
    handler: &GatewayHandler,
    id: RequestId,
    request: SubscriptionsListenRequest,
) -> Listening {
    let mut accepted = accepted(handler, &request.params.notifications);
    let (stream, messages) = mpsc::channel(LISTEN_QUEUE);
    let listener = Arc::new(Listener::new(id.clone(), accepted.clone(), stream.clone()));
    let mut guard = None;
    if let Some(uris) = accepted.resource_subscriptions.take() {
        let key = format!("listen-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let kept = subscribe(handler, &key, &listener, uris).await;
        accepted.resource_subscriptions = Some(kept);
        guard = Some(Unsubscribe {
            shared: handler.shared().clone(),
            key,
        });
    }
    let _ = stream.try_send(acknowledgment(&id, &accepted));
    handler.notifier().add_listener(listener);
    Listening { messages, guard }
}

/// Answers `request` (of id `id`) with its stream.
pub(super) async fn serve(
    handler: &GatewayHandler,
    id: RequestId,
    request: SubscriptionsListenRequest,
) -> Response {
    let Listening { messages, guard } = open(handler, id, request).await;
    let response = crate::held::replay::listen(messages, CancellationToken::new());
    match guard {
        Some(guard) => super::running::holding(response, guard),
        None => response,
    }
}

/// Numbers the listen streams that hold resource subscriptions (their key
/// among the sessions' in [`crate::subscriptions`]).
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Subscribes `listener` (under `key`) to each of `uris` (the first
/// [`MAX_PER_SESSION`] of them: a client's list is read no further);
/// those it could be subscribed to.
async fn subscribe(
    handler: &GatewayHandler,
    key: &str,
    listener: &Arc<Listener>,
    uris: Vec<String>,
) -> Vec<String> {
    let subscriptions = &handler.shared().subscriptions;
    let mut kept = Vec::with_capacity(uris.len());
    for uri in uris.into_iter().take(MAX_PER_SESSION) {
        let peer = ClientPeer::Listener(listener.clone());
        match subscriptions
            .subscribe(handler.view(), key, peer, &uri)
            .await
        {
            Ok(()) => kept.push(uri),
            Err(e) => tracing::debug!(%uri, "a listen stream's resource was not subscribed: {e}"),
        }
    }
    kept
}

/// Unsubscribes a listen stream's resources when dropped (its client
/// went away, or the gateway shut down).
pub(crate) struct Unsubscribe {
    shared: Arc<Shared>,
    key: String,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        let (shared, key) = (self.shared.clone(), std::mem::take(&mut self.key));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { shared.subscriptions.close_session(&key).await });
        }
    }
}

/// What a listener gets of what it asked for, as MCP's server decides
/// it: what the gateway takes of it (all) and declares.
fn accepted(handler: &GatewayHandler, requested: &SubscriptionFilter) -> SubscriptionFilter {
    let advertised = requested.supported_by(&handler.info().capabilities);
    requested.intersection(requested).intersection(&advertised)
}

/// The stream's first message: what it will carry, under its id.
fn acknowledgment(id: &RequestId, accepted: &SubscriptionFilter) -> ServerJsonRpcMessage {
    let mut acknowledgment = SubscriptionsAcknowledgedNotification::new(
        SubscriptionsAcknowledgedNotificationParams::new(accepted.clone()),
    );
    let mut meta = NotificationMetaObject::new();
    meta.set_subscription_id(id.clone());
    acknowledgment.extensions.insert(meta);
    ServerJsonRpcMessage::notification(ServerNotification::SubscriptionsAcknowledgedNotification(
        acknowledgment,
    ))
}
