//! A 2026-07-28 client's `subscriptions/listen`, answered in the HTTP task
//! that received it, as its other requests are: the stream acknowledges
//! the kinds of notification it will carry (those asked for that the
//! gateway declares: rmcp's rule, [`accepted`]), then carries each list
//! change of those kinds, with the subscription's id in its `_meta`, until
//! the client goes away (its listener is then dropped at the next change)
//! or the gateway shuts down (the stream ends: [`crate::shutdown`]).
//! A comment is sent when it has been quiet for a while, as on a session's
//! `GET` stream.

use axum::response::Response;
use rmcp::ServerHandler;
use rmcp::model::{
    ErrorData, NotificationMetaObject, RequestId, ServerJsonRpcMessage, ServerNotification,
    SubscriptionFilter, SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequest,
    SubscriptionsListenRequestMethod,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::handler::GatewayHandler;
use crate::notify::Listener;

/// How many notifications wait for one slow listener; past it new ones
/// are dropped (a list change told again says nothing new: the client
/// lists again on the next).
const LISTEN_QUEUE: usize = 64;

/// Answers `request` (of id `id`) with its stream, its listener kept by
/// `handler`'s notifier.
pub(super) fn serve(
    handler: &GatewayHandler,
    id: RequestId,
    request: SubscriptionsListenRequest,
) -> Response {
    let Some(accepted) = accepted(handler, &request.params.notifications) else {
        let refused = ServerJsonRpcMessage::error(
            ErrorData::method_not_found::<SubscriptionsListenRequestMethod>(),
            Some(id),
        );
        return super::with_status(super::json(&refused), super::stateless::status_of(&refused));
    };
    let (stream, messages) = mpsc::channel(LISTEN_QUEUE);
    let _ = stream.try_send(acknowledgment(&id, &accepted));
    handler
        .notifier()
        .add_listener(Listener::new(id, accepted, stream));
    super::listen(messages, CancellationToken::new())
}

/// What a listener gets of what it asked for, as rmcp's server decides it:
/// what the handler takes of it, and of that what the gateway declares;
/// `None` when the handler takes none.
fn accepted(
    handler: &GatewayHandler,
    requested: &SubscriptionFilter,
) -> Option<SubscriptionFilter> {
    let candidate = handler.accepted_subscription_filter(requested)?;
    let advertised = requested.supported_by(&handler.get_info().capabilities);
    Some(requested.intersection(&candidate).intersection(&advertised))
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
