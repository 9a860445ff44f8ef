//! `ChangeObservable`: the server's `list_changed` notifications (and
//! reconnects) as a stream of `ChangeEvent`s per subscriber.

use std::collections::VecDeque;

use extpool_core::{ChangeEvent, ChangeKind, ChangeObservable, ChangeStream};
use tokio::sync::{broadcast, watch};

use super::{Attached, McpServerCap, SIGNALLED};
use crate::handler::ChangeSignals;

struct EventState {
    attached: watch::Receiver<Option<Attached>>,
    signals: Option<broadcast::Receiver<ChangeKind>>,
    pending: VecDeque<ChangeKind>,
    id: String,
    source_uri: String,
}

/// Queues `kind` and the kinds derived from it, each unless already
/// queued: a burst the subscriber has not read yet is one event per kind
/// (the queue never holds more than the five kinds).
fn expand(kind: ChangeKind, out: &mut VecDeque<ChangeKind>) {
    let derived = match kind {
        ChangeKind::ResourcesChanged => Some(ChangeKind::SkillsChanged),
        ChangeKind::PromptsChanged => Some(ChangeKind::CommandsChanged),
        _ => None,
    };
    for kind in std::iter::once(kind).chain(derived) {
        if !out.contains(&kind) {
            out.push_back(kind);
        }
    }
}

impl ChangeObservable for McpServerCap {
    fn on_change(&self) -> Option<ChangeStream> {
        let mut attached = self.attached.subscribe();
        // Already attached: subscribe now, so nothing after this call is missed.
        let signals = attached
            .borrow_and_update()
            .as_ref()
            .map(|a| a.client.signals().subscribe());
        let state = EventState {
            attached,
            signals,
            pending: VecDeque::new(),
            id: self.name.to_string(),
            source_uri: format!("mcp://{}", self.name),
        };
        let stream = futures::stream::unfold(state, |mut st| async move {
            loop {
                if let Some(kind) = st.pending.pop_front() {
                    let event = ChangeEvent::new(st.id.clone(), kind, st.source_uri.clone());
                    return Some((Ok(event), st));
                }
                if let Some(rx) = &mut st.signals {
                    // Everything already signalled joins the queue first,
                    // so a burst read late is merged, not replayed.
                    loop {
                        match rx.try_recv() {
                            Ok(kind) => expand(kind, &mut st.pending),
                            Err(broadcast::error::TryRecvError::Lagged(_)) => {
                                for kind in SIGNALLED {
                                    expand(kind, &mut st.pending);
                                }
                            }
                            Err(_) => break,
                        }
                    }
                    if !st.pending.is_empty() {
                        continue;
                    }
                }
                match &mut st.signals {
                    None => {
                        let current = loop {
                            if let Some(a) = st.attached.borrow_and_update().clone() {
                                break a;
                            }
                            if st.attached.changed().await.is_err() {
                                return None;
                            }
                        };
                        // A client attached after this stream began (a lazy
                        // server's first call, or a replacement client):
                        // everything may differ from what was listed before.
                        st.signals = Some(current.client.signals().subscribe());
                        for kind in SIGNALLED {
                            expand(kind, &mut st.pending);
                        }
                    }
                    Some(rx) => {
                        tokio::select! {
                            received = rx.recv() => match received {
                                Ok(kind) => expand(kind, &mut st.pending),
                                Err(broadcast::error::RecvError::Lagged(_)) => {
                                    for kind in SIGNALLED {
                                        expand(kind, &mut st.pending);
                                    }
                                }
                                // The client is gone; follow the next one.
                                Err(broadcast::error::RecvError::Closed) => st.signals = None,
                            },
                            changed = st.attached.changed() => {
                                if changed.is_err() {
                                    return None;
                                }
                                // A new client (re-taken from the pool): resubscribe;
                                // everything may differ on the new connection.
                                let next = st.attached.borrow_and_update().clone();
                                st.signals = next.map(|a| a.client.signals().subscribe());
                                for kind in SIGNALLED {
                                    expand(kind, &mut st.pending);
                                }
                            }
                        }
                    }
                }
            }
        });
        Some(Box::pin(stream))
    }
}

impl McpServerCap {
    /// The server's `notifications/resources/updated` URIs from now on,
    /// following the client the capability uses (a replacement client too);
    /// updates a slow reader misses are skipped.
    pub(super) fn updates(&self) -> futures::stream::BoxStream<'static, String> {
        self.follow(ChangeSignals::subscribe_updates)
    }

    /// The params of the server's 2025-11-25 `notifications/tasks/status`
    /// from now on, as [`McpServerCap::updates`] follows its client.
    pub(super) fn task_status_stream(
        &self,
    ) -> futures::stream::BoxStream<'static, serde_json::Value> {
        self.follow(ChangeSignals::subscribe_task_status)
    }

    /// What `subscribe` gives of the client the capability uses from now
    /// on (a replacement client too); what a slow reader misses is skipped.
    fn follow<T: Clone + Send + 'static>(
        &self,
        subscribe: fn(&ChangeSignals) -> broadcast::Receiver<T>,
    ) -> futures::stream::BoxStream<'static, T> {
        struct State<T> {
            attached: watch::Receiver<Option<Attached>>,
            rx: Option<broadcast::Receiver<T>>,
            subscribe: fn(&ChangeSignals) -> broadcast::Receiver<T>,
        }
        impl<T: Clone> State<T> {
            /// Listens to the client attached now, if any.
            fn follow(&mut self) {
                let subscribe = self.subscribe;
                self.rx = self
                    .attached
                    .borrow_and_update()
                    .as_ref()
                    .map(|a| subscribe(a.client.signals()));
            }
        }
        let mut state = State {
            attached: self.attached.subscribe(),
            rx: None,
            subscribe,
        };
        state.follow();
        let stream = futures::stream::unfold(state, |mut st| async move {
            loop {
                let Some(rx) = &mut st.rx else {
                    if st.attached.changed().await.is_err() {
                        return None;
                    }
                    st.follow();
                    continue;
                };
                tokio::select! {
                    received = rx.recv() => match received {
                        Ok(item) => return Some((item, st)),
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            tracing::debug!(missed, "server notifications skipped for a slow reader");
                        }
                        Err(broadcast::error::RecvError::Closed) => st.rx = None,
                    },
                    changed = st.attached.changed() => {
                        if changed.is_err() {
                            return None;
                        }
                        st.follow();
                    }
                }
            }
        });
        Box::pin(stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_one_event_per_kind() {
        let mut q = VecDeque::new();
        for _ in 0..1000 {
            expand(ChangeKind::ToolsChanged, &mut q);
            expand(ChangeKind::ResourcesChanged, &mut q);
        }
        assert_eq!(
            Vec::from(q),
            [
                ChangeKind::ToolsChanged,
                ChangeKind::ResourcesChanged,
                ChangeKind::SkillsChanged
            ]
        );
    }

    #[test]
    fn events_expand_to_derived_kinds() {
        let mut q = VecDeque::new();
        expand(ChangeKind::ResourcesChanged, &mut q);
        expand(ChangeKind::PromptsChanged, &mut q);
        expand(ChangeKind::ToolsChanged, &mut q);
        assert_eq!(
            Vec::from(q),
            [
                ChangeKind::ResourcesChanged,
                ChangeKind::SkillsChanged,
                ChangeKind::PromptsChanged,
                ChangeKind::CommandsChanged,
                ChangeKind::ToolsChanged
            ]
        );
    }
}
