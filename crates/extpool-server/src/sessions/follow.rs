//! Tells an open durable session's clients when what it may see changes.

use std::sync::Arc;

use super::visible;
use crate::notify::ListKind;
use crate::sessions::OpenSession;
use crate::shared::Shared;

/// Notifies the session's clients whenever what it may see changes (a
/// granted name vanishing or returning); a name that is only available is
/// not announced until a refresh grants it.
pub(super) fn follow(shared: &Shared, open: &Arc<OpenSession>) {
    let weak = Arc::downgrade(open);
    let stop = shared.front.stop.clone();
    let changes = open.view.changes();
    tokio::spawn(async move {
        use futures::StreamExt;
        let mut changes = Box::pin(changes);
        let mut last = weak.upgrade().map(|o| visible(&o));
        loop {
            let event = tokio::select! {
                e = changes.next() => e,
                () = stop.cancelled() => None,
            };
            if event.is_none() {
                return;
            }
            let Some(open) = weak.upgrade() else { return };
            let now = visible(&open);
            if last.as_ref() != Some(&now) {
                open.notifier.notify(ListKind::Tools).await;
                last = Some(now);
            }
        }
    });
}
