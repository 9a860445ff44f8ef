//! Pushing `list_changed` notifications to every connected client.
//!
//! Legacy-session clients (those that sent `initialize`) are reached through
//! the peers kept from `initialize`; 2026-07-28 clients only through
//! their `subscriptions/listen` sinks. A peer or sink whose send fails is
//! dropped, so closed sessions do not pile up.

use std::sync::PoisonError;

use rmcp::service::SubscriptionSendError;

use super::TestServer;

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    Prompts,
}

impl TestServer {
    /// Sends `notifications/<kind>/list_changed` to every live client.
    pub(crate) async fn broadcast(&self, kind: ListKind) {
        let peers = std::mem::take(
            &mut *self
                .shared
                .peers
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut alive = Vec::with_capacity(peers.len());
        for peer in peers {
            if peer.is_transport_closed() {
                continue;
            }
            let sent = match kind {
                ListKind::Tools => peer.notify_tool_list_changed().await,
                ListKind::Resources => peer.notify_resource_list_changed().await,
                ListKind::Prompts => peer.notify_prompt_list_changed().await,
            };
            match sent {
                Ok(()) => alive.push(peer),
                Err(e) => tracing::debug!("dropping a closed peer: {e}"),
            }
        }
        let sent_to = alive.len();
        self.shared
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(alive);

        let sinks = std::mem::take(
            &mut *self
                .shared
                .sinks
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut live_sinks = Vec::with_capacity(sinks.len());
        for sink in sinks {
            let sent = match kind {
                ListKind::Tools => sink.notify_tool_list_changed().await,
                ListKind::Resources => sink.notify_resource_list_changed().await,
                ListKind::Prompts => sink.notify_prompt_list_changed().await,
            };
            match sent {
                Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {
                    live_sinks.push(sink);
                }
                Err(e) => tracing::debug!("dropping a closed subscription: {e}"),
            }
        }
        let subscribers = live_sinks.len();
        self.shared
            .sinks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(live_sinks);
        tracing::info!(?kind, peers = sent_to, subscribers, "sent list_changed");
    }
}
