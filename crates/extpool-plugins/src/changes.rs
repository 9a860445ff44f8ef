//! The change events of the live sources ([`crate::LocalCommandSource`],
//! [`crate::PluginSkills`]): one broadcast per source, a fresh stream per
//! subscriber (the RFC's `on_change`).

use extpool_core::{ChangeEvent, ChangeKind, ChangeStream};
use futures::StreamExt;
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

/// A source's change events.
#[derive(Debug, Clone)]
pub(crate) struct Changes {
    id: String,
    tx: broadcast::Sender<ChangeEvent>,
}

impl Changes {
    /// The events of source `id`.
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            tx: broadcast::channel(64).0,
        }
    }

    /// Tells every subscriber that `kind` changed.
    pub fn emit(&self, kind: ChangeKind) {
        // No subscriber is not an error.
        let _ = self.tx.send(ChangeEvent::new(&self.id, kind, ""));
    }

    /// A fresh stream of the events; a subscriber that fell behind is
    /// told `lagged` changed (it lists everything again).
    pub fn subscribe(&self, lagged: ChangeKind) -> ChangeStream {
        let id = self.id.clone();
        BroadcastStream::new(self.tx.subscribe())
            .map(move |item| match item {
                Ok(event) => Ok(event),
                Err(BroadcastStreamRecvError::Lagged(_)) => Ok(ChangeEvent::new(&id, lagged, "")),
            })
            .boxed()
    }
}
