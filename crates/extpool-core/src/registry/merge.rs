//! `merge_change_streams`: one stream of every visible capability's changes.
//!
//! Each source stream is drained by its own task into one channel, so events
//! come out in arrival order. A source that yields an error (or panics) is
//! logged and dropped alone. The tasks live in a `JoinSet` owned by the merged
//! stream: dropping the stream aborts them, so nothing outlives the consumer.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::ExtensionRegistry;
use crate::{ChangeEvent, ChangeStream, Scope};

/// Buffered events between the source tasks and the consumer.
const CHANNEL_CAPACITY: usize = 1024;

/// The merged change stream of a scope. Tasks start on first poll.
pub struct MergedChanges {
    pending: Vec<(String, ChangeStream)>,
    rx: Option<mpsc::Receiver<ChangeEvent>>,
    tasks: JoinSet<()>,
}

impl MergedChanges {
    fn start(&mut self) {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let handle = match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle,
            Err(e) => {
                tracing::error!("merged change stream polled outside a tokio runtime: {e}");
                self.pending.clear();
                self.rx = Some(rx);
                return;
            }
        };
        for (id, mut stream) in self.pending.drain(..) {
            let tx = tx.clone();
            self.tasks.spawn_on(
                async move {
                    while let Some(item) = stream.next().await {
                        match item {
                            Ok(event) => {
                                if tx.send(event).await.is_err() {
                                    return;
                                }
                            }
                            Err(e) => {
                                tracing::warn!(capability = %id, "change stream failed: {e}");
                                return;
                            }
                        }
                    }
                },
                &handle,
            );
        }
        self.rx = Some(rx);
    }

    /// Number of source tasks still running.
    pub fn live_sources(&self) -> usize {
        self.tasks.len()
    }
}

impl Stream for MergedChanges {
    type Item = ChangeEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ChangeEvent>> {
        if self.rx.is_none() {
            self.start();
        }
        // Reap finished tasks so a panicking source is logged, not kept.
        while let Poll::Ready(Some(done)) = self.tasks.poll_join_next(cx) {
            if let Err(e) = done
                && e.is_panic()
            {
                tracing::warn!("a change stream panicked; the others keep running");
            }
        }
        match self.rx.as_mut() {
            Some(rx) => rx.poll_recv(cx),
            None => Poll::Ready(None),
        }
    }
}

impl ExtensionRegistry {
    /// Merges the change streams of every observable capability visible from
    /// `scope`; `None` when none is observable.
    pub fn merge_change_streams(&self, scope: &Scope) -> Option<MergedChanges> {
        let pending: Vec<_> = self
            .get_visible_capabilities(scope)
            .iter()
            .filter_map(|cap| {
                let stream = cap.observable()?.on_change()?;
                Some((cap.id().to_owned(), stream))
            })
            .collect();
        if pending.is_empty() {
            return None;
        }
        Some(MergedChanges {
            pending,
            rx: None,
            tasks: JoinSet::new(),
        })
    }
}
