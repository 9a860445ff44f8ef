//! Resource subscriptions of client sessions (`resources/subscribe`,
//! `resources/unsubscribe`) over shared upstream connections.
//!
//! Upstream servers are shared by every session, so the gateway subscribes
//! upstream once per URI, when the first session subscribes (through that
//! session's view, which routes the URI to its server), and unsubscribes
//! when the last one leaves (by `resources/unsubscribe` or by closing).
//! Each `notifications/resources/updated` an upstream sends is passed to
//! the sessions subscribed to that URI, and only to them. Sessions are
//! keyed by their client connection.

use std::collections::HashMap;

use extpool_host::{HostError, ResourceUpdate, View};
use futures::StreamExt;
use rmcp::model::{
    ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification,
};

use crate::client_peer::ClientPeer;
use tokio::sync::Mutex;

/// Most subscriptions one session may hold.
pub const MAX_PER_SESSION: usize = 1024;

/// The sessions subscribed to one URI, and the view the gateway
/// subscribed upstream through.
struct Subscribers {
    view: View,
    /// Session key and its peer.
    sessions: Vec<(String, ClientPeer)>,
}

/// Which sessions are subscribed to which URI.
#[derive(Default)]
pub struct Subscriptions {
    /// URI → its subscribers. A tokio mutex: held across the upstream
    /// (un)subscribe, so two sessions never both subscribe upstream.
    by_uri: Mutex<HashMap<String, Subscribers>>,
}

/// Why a subscription was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    /// The session holds too many.
    #[error("a session may hold at most {MAX_PER_SESSION} resource subscriptions")]
    TooMany,
    /// The server that has the resource refused or failed.
    #[error(transparent)]
    Host(#[from] HostError),
}

impl Subscriptions {
    /// Subscribes `session` (reached through `peer`) to `uri`, subscribing
    /// upstream through `view` when it is the first.
    pub(crate) async fn subscribe(
        &self,
        view: &View,
        session: &str,
        peer: ClientPeer,
        uri: &str,
    ) -> Result<(), SubscribeError> {
        let mut by_uri = self.by_uri.lock().await;
        if by_uri
            .get(uri)
            .is_some_and(|subs| subs.sessions.iter().any(|(s, _)| s == session))
        {
            return Ok(());
        }
        let held = by_uri
            .values()
            .filter(|subs| subs.sessions.iter().any(|(s, _)| s == session))
            .count();
        if held >= MAX_PER_SESSION {
            return Err(SubscribeError::TooMany);
        }
        if !by_uri.contains_key(uri) {
            let server = view.subscribe(uri, true).await?;
            tracing::debug!(session, uri, server, "subscribed upstream");
            by_uri.insert(
                uri.to_owned(),
                Subscribers {
                    view: view.clone(),
                    sessions: Vec::new(),
                },
            );
        }
        if let Some(subs) = by_uri.get_mut(uri) {
            subs.sessions.push((session.to_owned(), peer));
        }
        Ok(())
    }

    /// Unsubscribes `session` from `uri`, and upstream when it was the last.
    pub async fn unsubscribe(&self, session: &str, uri: &str) -> Result<(), HostError> {
        let mut by_uri = self.by_uri.lock().await;
        let Some(subs) = by_uri.get_mut(uri) else {
            return Ok(());
        };
        subs.sessions.retain(|(s, _)| s != session);
        if subs.sessions.is_empty()
            && let Some(subs) = by_uri.remove(uri)
        {
            subs.view.subscribe(uri, false).await?;
        }
        Ok(())
    }

    /// Drops every subscription of a closed session (unsubscribing
    /// upstream where it was the last; failures are logged).
    pub async fn close_session(&self, session: &str) {
        let mut by_uri = self.by_uri.lock().await;
        let mut emptied = Vec::new();
        for (uri, subs) in by_uri.iter_mut() {
            let before = subs.sessions.len();
            subs.sessions.retain(|(s, _)| s != session);
            if subs.sessions.is_empty() && before > 0 {
                emptied.push(uri.clone());
            }
        }
        for uri in emptied {
            let Some(subs) = by_uri.remove(&uri) else {
                continue;
            };
            if let Err(e) = subs.view.subscribe(&uri, false).await {
                tracing::debug!(uri, "unsubscribing upstream after a session closed: {e}");
            }
        }
    }

    /// Passes `update` to every session subscribed to its URI.
    pub async fn deliver(&self, update: &ResourceUpdate) {
        let peers: Vec<ClientPeer> = match self.by_uri.lock().await.get(&update.uri) {
            Some(subs) => subs.sessions.iter().map(|(_, p)| p.clone()).collect(),
            None => return,
        };
        for peer in peers {
            let param = ResourceUpdatedNotificationParam::new(update.uri.clone());
            let notification = ServerNotification::ResourceUpdatedNotification(
                ResourceUpdatedNotification::new(param),
            );
            if let Err(e) = peer.notify(notification).await {
                tracing::debug!(uri = %update.uri, "resources/updated not delivered: {e}");
            }
        }
    }

    /// Follows `view`'s resource updates until they end, delivering each.
    pub async fn follow(&self, view: View) {
        let mut updates = Box::pin(view.resource_updates());
        while let Some(update) = updates.next().await {
            self.deliver(&update).await;
        }
    }
}
