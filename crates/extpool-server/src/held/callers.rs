//! Each caller's own view for requests without a session (2026-07-28
//! requests on `/mcp`), most recently used first and bounded: past
//! [`KEPT`] callers the least recently used view is given back to be
//! closed (made again on its caller's next request). The handler makes
//! the views; this keeps them.

use extpool_host::View;
use parking_lot::Mutex;

/// Most callers whose own view for requests without a session is kept
/// (the least recently used is closed first; made again on its caller's
/// next request).
pub(crate) const KEPT: usize = 256;

/// Each caller's own view for requests without a session, most recently
/// used first.
#[derive(Default)]
pub(crate) struct CallerViews {
    /// Each caller's (by owner key) view, most recently used first.
    views: Mutex<Vec<(String, View)>>,
    /// One caller's view is made once.
    making: tokio::sync::Mutex<()>,
}

impl CallerViews {
    /// `owner`'s view if one is kept (it becomes the most recently used).
    pub(crate) fn find(&self, owner: &str) -> Option<View> {
        let mut views = self.views.lock();
        let i = views.iter().position(|(o, _)| *o == owner)?;
        let entry = views.remove(i);
        let view = entry.1.clone();
        views.insert(0, entry);
        Some(view)
    }

    /// Held while a caller's view is made, so one is made at a time.
    pub(crate) async fn making(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.making.lock().await
    }

    /// Keeps `view` as `owner`'s; returns the least recently used one
    /// past [`KEPT`], for its caller to close.
    pub(crate) fn keep(&self, owner: String, view: View) -> Option<View> {
        let mut views = self.views.lock();
        views.insert(0, (owner, view));
        if views.len() > KEPT {
            views.pop().map(|(_, old)| old)
        } else {
            None
        }
    }
}
