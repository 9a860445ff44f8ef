//! The change-stream subscriptions of a loop: one per current capability
//! instance, each tagged with a generation so that late events of a
//! retired runtime are recognised and ignored.

use std::collections::HashMap;
use std::sync::Arc;

use extpool_core::Capability;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::{Shared, Source};
use crate::revision::same_capability;

/// Queue between the change-stream tasks and the loop.
const EVENT_QUEUE: usize = 1024;

/// One live change-stream subscription.
struct Subscription {
    generation: u64,
    capability: Arc<dyn Capability>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Every subscription of one loop, and the queue their events arrive on.
pub(super) struct Subscriptions {
    subs: HashMap<String, Subscription>,
    next_generation: u64,
    tx: mpsc::Sender<u64>,
}

impl Subscriptions {
    /// No subscription yet; the receiver gets each event's generation.
    pub(super) fn new() -> (Self, mpsc::Receiver<u64>) {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let subs = Self {
            subs: HashMap::new(),
            next_generation: 0,
            tx,
        };
        (subs, rx)
    }

    /// True when `generation` is a current subscription's (not a retired
    /// runtime's).
    pub(super) fn is_current(&self, generation: u64) -> bool {
        self.subs.values().any(|s| s.generation == generation)
    }

    /// Keeps one subscription per current capability instance of `visible`:
    /// drops those of removed or replaced instances, subscribes to new ones.
    pub(super) fn resubscribe(&mut self, visible: &[Source], shared: &Arc<Shared>) {
        self.subs.retain(|id, sub| {
            visible
                .iter()
                .any(|s| s.cap.id() == id && same_capability(&s.cap, &sub.capability))
        });
        for cap in visible.iter().map(|s| &s.cap) {
            if self.subs.contains_key(cap.id()) {
                continue;
            }
            self.next_generation += 1;
            if let Some(task) = self.forward(cap, self.next_generation, shared) {
                let sub = Subscription {
                    generation: self.next_generation,
                    capability: cap.clone(),
                    task,
                };
                self.subs.insert(cap.id().to_owned(), sub);
            }
        }
    }

    /// Forwards `cap`'s change events, tagged `generation`, to the loop;
    /// `None` when it has no change stream.
    fn forward(
        &self,
        cap: &Arc<dyn Capability>,
        generation: u64,
        shared: &Arc<Shared>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let mut stream = cap.observable().and_then(|o| o.on_change())?;
        let tx = self.tx.clone();
        let weak = Arc::downgrade(shared);
        let id = cap.id().to_owned();
        Some(tokio::spawn(async move {
            while let Some(item) = stream.next().await {
                match item {
                    Ok(event) => {
                        tracing::trace!(source = %id, kind = %event.kind, "catalog: change event");
                        if tx.try_send(generation).is_err() {
                            // Queue full: a cycle is certainly coming; make sure.
                            if let Some(shared) = weak.upgrade() {
                                shared.wake.notify_one();
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(source = %id, "catalog: change stream failed: {e}");
                        return;
                    }
                }
            }
        }))
    }
}
