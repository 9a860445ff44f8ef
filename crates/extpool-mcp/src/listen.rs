//! List changes of a server spoken to in the 2026-07-28 era. That era has
//! no session to push notifications on: a server sends `list_changed` only
//! to a listener (`subscriptions/listen`), never to the client handler. A
//! connection in that era keeps one listener, which turns what it hears
//! into the same change signals the handler raises in the session era.

use std::sync::Arc;
use std::time::Duration;

use extpool_core::ChangeKind;
use rmcp::model::{ErrorCode, ServerNotification, SubscriptionFilter};
use rmcp::service::RoleClient;
use rmcp::{Peer, ServiceError};

use crate::handler::ChangeSignals;
use crate::name::ServerName;

/// First wait before listening again after the subscription ended.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// Longest wait between attempts to listen.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The change kind of `notification`, if it announces one.
fn change_of(notification: &ServerNotification) -> Option<ChangeKind> {
    match notification {
        ServerNotification::ToolListChangedNotification(_) => Some(ChangeKind::ToolsChanged),
        ServerNotification::ResourceListChangedNotification(_) => {
            Some(ChangeKind::ResourcesChanged)
        }
        ServerNotification::PromptListChangedNotification(_) => Some(ChangeKind::PromptsChanged),
        _ => None,
    }
}

/// Listens for the server's list changes while `peer`'s transport is open
/// (the connection aborts it when it closes), listening again with a
/// growing pause when the subscription ends. A server that does not offer
/// `subscriptions/listen` is not asked again. After listening again, every
/// list is marked changed: a change may have gone unheard in between.
pub(crate) async fn follow_changes(
    peer: Peer<RoleClient>,
    server: ServerName,
    signals: Arc<ChangeSignals>,
) {
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .resources_list_changed()
        .prompts_list_changed()
        .build();
    let mut backoff = FIRST_BACKOFF;
    let mut first = true;
    while !peer.is_transport_closed() {
        match peer.listen(filter.clone()).await {
            Ok(mut subscription) => {
                tracing::debug!(%server, "listening for list changes");
                if !first {
                    signals.bump_all();
                }
                backoff = FIRST_BACKOFF;
                loop {
                    match subscription.next().await {
                        Ok(Some(notification)) => {
                            if let Some(kind) = change_of(&notification) {
                                tracing::debug!(%server, ?kind, "list changed");
                                signals.bump(kind);
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            tracing::debug!(%server, "the list-change subscription failed: {e}");
                            break;
                        }
                    }
                }
                tracing::debug!(%server, "the list-change subscription ended");
            }
            Err(ServiceError::McpError(e)) if e.code == ErrorCode::METHOD_NOT_FOUND => {
                tracing::debug!(%server, "no subscriptions/listen: list changes go unheard");
                return;
            }
            Err(e) => tracing::debug!(%server, "subscriptions/listen failed: {e}"),
        }
        first = false;
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
