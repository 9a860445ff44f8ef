//! One open session: its view, its authority and the policy they make,
//! its own servers' state, and the notices its clients get when what they
//! may see changes.

use std::sync::Arc;

use extpool_host::{Grants, View, ViewPolicy};
use extpool_state::{NameAuthority, SessionId};
use parking_lot::{Mutex, RwLock};

use crate::gateway::Shared;
use crate::notify::{ListKind, Notifier};

/// One open session.
pub struct OpenSession {
    /// Its id.
    pub id: SessionId,
    /// Whose it is (`None`: made without identities, which only an
    /// operator reaches).
    pub owner: Option<String>,
    /// Its host view (per-session servers registered in it).
    pub view: View,
    /// Its authority, as last read from or written to the store.
    pub authority: RwLock<Arc<NameAuthority>>,
    /// Names of its per-session servers.
    pub servers: Vec<String>,
    /// Its MCP clients, for `list_changed`.
    pub notifier: Notifier,
    /// The gateway's policy for durable sessions (its own tools with
    /// `CloseSession`), which its own adds its grants to.
    pub(super) base: Arc<ViewPolicy>,
    /// When it was last used (opened, refreshed, or asked for by its
    /// endpoint).
    pub(super) last_used: Mutex<tokio::time::Instant>,
}

impl OpenSession {
    /// Marks the session used now.
    pub(crate) fn touch(&self) {
        *self.last_used.lock() = tokio::time::Instant::now();
    }

    /// Takes `authority` as the session's (read from or written to the
    /// store) and gives its view the policy it makes: the gateway's, with
    /// these grants and this session's own servers' names. The view's next
    /// table is compiled under it; a call never asks the store.
    pub fn set_authority(&self, authority: NameAuthority) {
        let authority = Arc::new(authority);
        let grants = {
            let authority = authority.clone();
            Grants::new(move |name| authority.allows(name))
        };
        *self.authority.write() = authority;
        // The gateway's policy refined: its rows stay shared, only what
        // these grants and names take out is this session's.
        self.view
            .set_policy(self.base.refine(Some(grants), self.servers.iter().cloned()));
    }

    /// Each of its own servers as this replica last listed it: `ready`
    /// (listed), `failed` with the error, or `starting` (not yet listed).
    pub fn server_status(&self) -> Vec<serde_json::Value> {
        let sources = self.view.own_sources();
        self.servers
            .iter()
            .map(|name| {
                let source = sources.iter().find(|s| s.id == *name);
                let error = source
                    .and_then(|s| s.last_error.as_ref())
                    .map(|e| e.to_string());
                let state = match (source, &error) {
                    (_, Some(_)) => "failed",
                    (Some(s), None) if s.revision.is_some() => "ready",
                    _ => "starting",
                };
                serde_json::json!({"name": name, "state": state, "error": error})
            })
            .collect()
    }

    /// The catalog names active in this session's view now, granted or not
    /// (built-ins excluded: they are not granted, they are always there).
    pub(super) fn active(&self) -> Vec<String> {
        self.view
            .revision()
            .all_tools()
            .map(|t| t.name.clone())
            .collect()
    }
}

/// Notifies the session's clients whenever what it may see changes (a
/// granted name vanishing or returning); a name that is only available is
/// not announced until a refresh grants it.
pub(super) fn follow(shared: &Shared, open: &Arc<OpenSession>) {
    let weak = Arc::downgrade(open);
    let stop = shared.stop.clone();
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

/// The tool names a session's clients see now (its table's).
pub(super) fn visible(open: &OpenSession) -> Vec<String> {
    open.view
        .table()
        .visible()
        .map(|(_, r)| r.tool.name.clone())
        .collect()
}
