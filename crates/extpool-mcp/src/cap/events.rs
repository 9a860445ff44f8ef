//! `ChangeObservable`: the server's `list_changed` notifications (and
//! reconnects) as a stream of `ChangeEvent`s per subscriber.

use std::collections::VecDeque;

use extpool_core::{ChangeEvent, ChangeKind, ChangeObservable, ChangeStream};
use tokio::sync::{broadcast, watch};

use super::{Attached, McpServerCap, SIGNALLED};

struct EventState {
    attached: watch::Receiver<Option<Attached>>,
    signals: Option<broadcast::Receiver<ChangeKind>>,
    pending: VecDeque<ChangeKind>,
    id: String,
    source_uri: String,
}

fn expand(kind: ChangeKind, out: &mut VecDeque<ChangeKind>) {
    out.push_back(kind);
    match kind {
        ChangeKind::ResourcesChanged => out.push_back(ChangeKind::SkillsChanged),
        ChangeKind::PromptsChanged => out.push_back(ChangeKind::CommandsChanged),
        _ => {}
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

#[cfg(test)]
mod tests {
    use super::*;

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
