//! The gateway over stdio: rmcp's service reads and writes the messages
//! (its `initialize` handshake, its cancellations, its peer for what the
//! gateway sends the client), and every request is answered by the
//! handler's one dispatch ([`super::dispatch`]), as over HTTP, from an
//! [`Exchange`] made of rmcp's request context here — nothing of that
//! context reaches the handler. The one caller over stdio is the local
//! one ([`Principal::local`]).
//!
//! `subscriptions/listen` (a stream that stays open) is rmcp's own: its
//! subscription context carries the notifications the handler's notifier
//! sends, as over HTTP [`crate::front`]'s stream does.

use std::borrow::Cow;
use std::sync::Arc;

use extpool_host::core::Principal;
use rmcp::model::{
    ClientNotification, ClientRequest, ProtocolVersion, ServerConfig, ServerResult,
    SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, Service};

use super::GatewayHandler;
use super::exchange::{Back, Exchange};
use crate::client_peer::ClientPeer;

/// The handler of a stdio connection, as rmcp's service runs it.
pub(crate) struct Stdio(pub GatewayHandler);

impl Service<RoleServer> for Stdio {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let principal = Arc::new(Principal::local());
        match request {
            ClientRequest::InitializeRequest(init) => {
                context.peer.set_peer_info(init.params.clone());
                let client = ClientPeer::Rmcp(context.peer.clone());
                self.0
                    .initialize(&principal, &init.params, client)
                    .await
                    .map(ServerResult::InitializeResult)
            }
            listen @ ClientRequest::SubscriptionsListenRequest(_) => {
                Listener(self.0.clone())
                    .handle_request(listen, context)
                    .await
            }
            request => {
                let session = context.peer.peer_info();
                let ex = Exchange {
                    id: context.id,
                    ct: context.ct,
                    meta: context.meta,
                    caller: super::caller::Caller::of(self.0.shared(), principal),
                    headers: None,
                    back: Back::Peer(context.peer.clone()),
                    standalone: session.is_none(),
                    session,
                    span: None,
                    read: Default::default(),
                };
                self.0.dispatch(request, &ex).await
            }
        }
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        _context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if matches!(notification, ClientNotification::InitializedNotification(_)) {
            self.0.initialized();
        }
        Ok(())
    }

    fn get_info(&self) -> ServerConfig {
        self.0.info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(super::dispatch::supported())
    }
}

/// `subscriptions/listen` over stdio: rmcp checks the request and keeps
/// the stream; the handler's notifier writes to it until it is cancelled.
struct Listener(GatewayHandler);

impl ServerHandler for Listener {
    fn get_info(&self) -> ServerConfig {
        self.0.info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(super::dispatch::supported())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.0.notifier().add_sink(context.sink().clone());
        context.cancelled().await;
        Ok(())
    }
}

/// Tasks over `extpool serve --stdio`, as over HTTP: a client's
/// task-augmented `tools/call` and 2025-11-25 task methods are read whole
/// from their lines ([`crate::tasks::session_request`]), and the `initialize` answer
/// declares the tasks `handler` declares ([`crate::tasks::declare_in`]).
pub(crate) fn over_stdio(
    stdio: &mut extpool_host::mcp::transport::StdioServerTransport,
    handler: &GatewayHandler,
) {
    use rmcp::model::{JsonRpcMessage, ServerResult};
    let reading = handler.clone();
    stdio.set_amend(Box::new(move |line, message| match message {
        JsonRpcMessage::Request(mut request) => {
            request.request = crate::tasks::session_request(request.request, line, || {
                reading.declared_tasks().is_some()
            });
            JsonRpcMessage::Request(request)
        }
        other => other,
    }));
    let declaring = handler.clone();
    stdio.set_rewrite(Box::new(move |message| {
        let JsonRpcMessage::Response(response) = message else {
            return None;
        };
        if !matches!(response.result, ServerResult::InitializeResult(_)) {
            return None;
        }
        let tasks = declaring.declared_tasks()?;
        crate::tasks::declare_in(&serde_json::to_vec(message).ok()?, &tasks)
    }));
}
