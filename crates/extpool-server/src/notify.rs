//! `list_changed` to every client whose view changed.
//!
//! Session-era clients are reached through the peer kept from their
//! `initialize`; 2026-07-28 clients only through `subscriptions/listen`
//! sinks. One task follows the pool view's changes; on each new catalog
//! revision it compares what clients can list (tools, resources, prompts)
//! with the revision before and notifies only the kinds that changed.
//! Closed peers and sinks are pruned when a send fails.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use extpool_host::{HostEvent, Pin, View};
use futures::StreamExt;
use parking_lot::Mutex;
use rmcp::model::{
    PromptListChangedNotification, ResourceListChangedNotification, ServerNotification,
    SubscriptionFilter, ToolListChangedNotification,
};
use rmcp::service::{SubscriptionSendError, SubscriptionSink};

use crate::client_peer::{ClientPeer, Listener};

/// Most clients kept for notifications; past it the oldest are dropped
/// (they still work; they re-list on their own).
pub const MAX_SUBSCRIBERS: usize = 10_000;

/// Which lists a client can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    /// Its `list_changed` notification.
    fn changed(self) -> ServerNotification {
        match self {
            Self::Tools => ServerNotification::ToolListChangedNotification(
                ToolListChangedNotification::default(),
            ),
            Self::Resources => ServerNotification::ResourceListChangedNotification(
                ResourceListChangedNotification::default(),
            ),
            Self::Prompts => ServerNotification::PromptListChangedNotification(
                PromptListChangedNotification::default(),
            ),
        }
    }

    /// Whether `filter` asks for its `list_changed`.
    fn asked_in(self, filter: &SubscriptionFilter) -> bool {
        let asked = match self {
            Self::Tools => filter.tools_list_changed,
            Self::Resources => filter.resources_list_changed,
            Self::Prompts => filter.prompts_list_changed,
        };
        asked == Some(true)
    }
}

/// Tells `listener` that `kind` changed, if it accepted that; dropped
/// when its stream has no room.
fn tell(listener: &Listener, kind: ListKind) {
    if kind.asked_in(listener.accepted()) {
        let _ = listener.send(kind.changed());
    }
}

/// The clients to notify.
#[derive(Default)]
pub struct Notifier {
    peers: Mutex<Vec<ClientPeer>>,
    sinks: Mutex<Vec<SubscriptionSink>>,
    listeners: Mutex<Vec<Arc<Listener>>>,
}

impl Notifier {
    /// Keeps a session-era client's peer.
    pub(crate) fn add_peer(&self, peer: ClientPeer) {
        let mut peers = self.peers.lock();
        peers.retain(|p| !p.is_closed());
        if peers.len() >= MAX_SUBSCRIBERS {
            peers.remove(0);
        }
        peers.push(peer);
    }

    /// Keeps a 2026-era client's `subscriptions/listen` sink.
    pub fn add_sink(&self, sink: SubscriptionSink) {
        let mut sinks = self.sinks.lock();
        if sinks.len() >= MAX_SUBSCRIBERS {
            sinks.remove(0);
        }
        sinks.push(sink);
    }

    /// Keeps a 2026-era client's `subscriptions/listen` stream answered by
    /// the gateway; those whose client went away are dropped.
    pub(crate) fn add_listener(&self, listener: Arc<Listener>) {
        let mut listeners = self.listeners.lock();
        listeners.retain(|l| !l.is_closed());
        if listeners.len() >= MAX_SUBSCRIBERS {
            listeners.remove(0);
        }
        listeners.push(listener);
    }

    /// Sends `kind`'s `list_changed` to every client; clients whose
    /// transport or subscription closed are dropped.
    pub async fn notify(&self, kind: ListKind) {
        let listening = {
            let mut listeners = self.listeners.lock();
            listeners.retain(|l| !l.is_closed());
            listeners.iter().for_each(|l| tell(l, kind));
            listeners.len()
        };
        let peers: Vec<ClientPeer> = std::mem::take(&mut *self.peers.lock());
        let mut live = Vec::with_capacity(peers.len());
        for peer in peers {
            let sent = peer.notify(kind.changed()).await;
            if sent.is_ok() || !peer.is_closed() {
                live.push(peer);
            }
        }
        let reached = live.len();
        self.peers.lock().extend(live);
        let sinks: Vec<SubscriptionSink> = std::mem::take(&mut *self.sinks.lock());
        let mut live = Vec::with_capacity(sinks.len());
        for sink in sinks {
            let sent = match kind {
                ListKind::Tools => sink.notify_tool_list_changed().await,
                ListKind::Resources => sink.notify_resource_list_changed().await,
                ListKind::Prompts => sink.notify_prompt_list_changed().await,
            };
            match sent {
                Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => live.push(sink),
                Err(e) => tracing::debug!("dropping a closed subscription: {e}"),
            }
        }
        let subscribers = live.len();
        self.sinks.lock().extend(live);
        tracing::debug!(
            ?kind,
            peers = reached,
            subscribers,
            listening,
            "sent list_changed"
        );
    }

    /// Follows `view` until its change stream ends, notifying clients of
    /// every list that changed between revisions.
    pub async fn follow(&self, view: View) {
        let mut last = Fingerprints::of(&view);
        let mut changes = Box::pin(view.changes());
        while let Some(event) = changes.next().await {
            if !matches!(event, HostEvent::Revision { .. }) {
                continue;
            }
            let now = Fingerprints::of(&view);
            for (kind, changed) in [
                (ListKind::Tools, now.tools != last.tools),
                (ListKind::Resources, now.resources != last.resources),
                (ListKind::Prompts, now.prompts != last.prompts),
            ] {
                if changed {
                    self.notify(kind).await;
                }
            }
            last = now;
        }
    }
}

/// Feeds what is written to a hasher, so a value is hashed as its JSON
/// text without the text being made.
struct HashWriter<'a>(&'a mut DefaultHasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A hash of each list a client sees.
#[derive(Debug, PartialEq, Eq)]
struct Fingerprints {
    tools: u64,
    resources: u64,
    prompts: u64,
}

impl Fingerprints {
    fn of(view: &View) -> Self {
        let hash = |f: &dyn Fn(&mut DefaultHasher)| {
            let mut h = DefaultHasher::new();
            f(&mut h);
            h.finish()
        };
        Self {
            tools: hash(&|h| {
                // The table's rows read in place: `View::tools` copies
                // every schema, and a schema's text would be another
                // copy, a list's worth of memory per fingerprint.
                for (_, r) in view.table(Pin::now()).visible() {
                    (&r.tool.name, &r.tool.description).hash(h);
                    // Writing to a hasher cannot fail.
                    let _ = serde_json::to_writer(HashWriter(h), &*r.tool.input_schema);
                }
            }),
            resources: hash(&|h| {
                for r in view.resources() {
                    (&r.uri, &r.name).hash(h);
                }
            }),
            prompts: hash(&|h| {
                for c in view.commands() {
                    (&c.name, &c.description).hash(h);
                }
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::RequestId;
    use tokio::sync::mpsc;

    #[tokio::test]
    async fn a_listener_hears_only_the_kinds_it_accepted_under_its_id() {
        let notifier = Notifier::default();
        let (stream, mut heard) = mpsc::channel(8);
        let accepted = SubscriptionFilter::builder().tools_list_changed().build();
        let id = RequestId::String("sub".into());
        notifier.add_listener(Arc::new(Listener::new(id.clone(), accepted, stream)));
        notifier.notify(ListKind::Prompts).await;
        notifier.notify(ListKind::Resources).await;
        notifier.notify(ListKind::Tools).await;
        let message = serde_json::to_value(heard.try_recv().unwrap()).unwrap();
        assert_eq!(
            message["method"], "notifications/tools/list_changed",
            "{message}"
        );
        let meta = message["params"]["_meta"].as_object().unwrap();
        assert!(
            meta.iter()
                .any(|(k, v)| k.ends_with("subscriptionId") && v == "sub"),
            "{message}"
        );
        assert!(heard.try_recv().is_err(), "nothing else");

        // Gone: dropped at the next change.
        drop(heard);
        notifier.notify(ListKind::Tools).await;
        assert!(notifier.listeners.lock().is_empty());
    }
}
