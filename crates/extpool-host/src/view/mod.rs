//! [`View`]: what one scope — a session, an agent inside it, a turn inside
//! that — sees and does.
//!
//! A view lists the model-facing tools, calls them, reads `skill://` and
//! MCP resource URIs, lists and runs commands, collects instructions and
//! streams changes, always through the catalog revision it pins for the
//! operation. It registers capabilities of its own at its level; they are
//! visible to it and to the views inside it (RFC visibility: pool →
//! session → agent → turn, never the reverse) and are shut down when it
//! closes.
//!
//! A view without capabilities of its own costs a few hundred bytes: it
//! reads its parent's catalog. The first capability it registers gives it
//! an overlay catalog over the pool's shared revision, which lists only the
//! capabilities the pool does not have — never a copy of the pool's table.
//!
//! Its rooms, by what they do: `catalog` reads the catalog (tools,
//! resources, commands, permissions, health), `calls` calls tools and
//! renders commands, `content` lists skills and reads resources and
//! instructions, `lifecycle` registers, reconciles, streams changes and
//! closes. They all stand on the `shared` module's `HostInner`, never on
//! [`crate::Host`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use extpool_catalog::Catalog;
use extpool_core::{ChangeEvent, Scope, ScopeLevel};
use parking_lot::Mutex;
use serde::Serialize;

use crate::error::HostError;
use crate::shared::HostInner;

mod calls;
mod catalog;
mod content;
mod directory;
mod guard;
mod lifecycle;
mod policy;

pub use calls::{GuardedCall, RELATED_TASK, ToolCall};
pub use catalog::model_tools;
pub(crate) use catalog::tools_of;
pub use policy::Pin;

/// A change a view's consumer may act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HostEvent {
    /// A capability reported a change (tools, resources, prompts, skills).
    Change(ChangeEvent),
    /// The view's catalog published a new revision.
    Revision {
        /// Its number.
        number: u64,
        /// Tools in it (built-ins excluded).
        tools: usize,
        /// Commands in it.
        commands: usize,
        /// Resources in it.
        resources: usize,
    },
    /// A capability's server stayed unreachable after a reconnect: its
    /// tools leave the next compiled toolsets until it recovers.
    Degraded {
        /// The capability (server) id.
        capability: String,
        /// The failure, as the caller saw it.
        reason: String,
    },
    /// A degraded capability is usable again.
    Recovered {
        /// The capability id.
        capability: String,
    },
}

/// The shared state of one view.
pub(crate) struct ViewInner {
    pub host: Arc<HostInner>,
    pub scope: Scope,
    /// The view this one is inside (weak: a parent holds its children).
    parent: Weak<ViewInner>,
    /// The map this view is kept in while open (its parent's children, or
    /// the host's sessions); weak, so a dropped host frees its views.
    siblings: Weak<Views>,
    overlay: Mutex<Option<Arc<Catalog>>>,
    /// What its model sees and may call, when it has a policy of its own
    /// (else its parent's, else the host's open one).
    policy: Mutex<Option<Arc<crate::policy::ViewPolicy>>>,
    /// Open views inside this one, by agent name or turn id (kept until
    /// closed, so asking again gives the same view).
    children: Arc<Views>,
    closed: AtomicBool,
}

/// Open views by key (session id, agent name or turn id).
pub(crate) type Views = Mutex<HashMap<String, Arc<ViewInner>>>;

impl ViewInner {
    pub(crate) fn new(
        host: Arc<HostInner>,
        scope: Scope,
        parent: Weak<ViewInner>,
        siblings: Weak<Views>,
    ) -> Self {
        Self {
            host,
            scope,
            parent,
            siblings,
            overlay: Mutex::new(None),
            policy: Mutex::new(None),
            children: Arc::new(Mutex::new(HashMap::new())),
            closed: AtomicBool::new(false),
        }
    }

    /// The catalog this view reads: its own overlay, else its parent's.
    fn catalog(&self) -> Arc<Catalog> {
        if let Some(own) = self.overlay.lock().clone() {
            return own;
        }
        match self.parent.upgrade() {
            Some(parent) => parent.catalog(),
            None => self.host.catalog.clone(),
        }
    }

    /// The catalogs this view reads through, innermost first: its own
    /// overlay, its parents' overlays, the pool catalog.
    pub(crate) fn catalogs(&self) -> Vec<Arc<Catalog>> {
        let mut out = Vec::new();
        if let Some(own) = self.overlay.lock().clone() {
            out.push(own);
        }
        let mut next = self.parent.upgrade();
        while let Some(view) = next {
            if let Some(own) = view.overlay.lock().clone() {
                out.push(own);
            }
            next = view.parent.upgrade();
        }
        out.push(self.host.catalog.clone());
        out
    }

    /// Marks this view and every view inside it closed and stops their
    /// catalogs (published revisions stay readable).
    pub(crate) async fn close_tree(&self) {
        self.closed.store(true, Ordering::Release);
        let children: Vec<Arc<ViewInner>> = self.children.lock().drain().map(|(_, v)| v).collect();
        for child in children {
            Box::pin(child.close_tree()).await;
        }
        let overlay = self.overlay.lock().clone();
        if let Some(overlay) = overlay {
            overlay.shutdown().await;
        }
    }
}

/// A scoped view of the host: a session, an agent in it, or a turn in that.
/// Cheap to clone; clones are the same view.
#[derive(Clone)]
pub struct View {
    pub(crate) inner: Arc<ViewInner>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("scope", &self.inner.scope)
            .finish()
    }
}

/// Finds or creates the open view `key` of `children`.
pub(crate) fn child_view(
    children: &Arc<Views>,
    key: &str,
    make: impl FnOnce(Weak<Views>) -> ViewInner,
) -> View {
    let mut map = children.lock();
    if let Some(inner) = map.get(key)
        && !inner.closed.load(Ordering::Acquire)
    {
        return View {
            inner: inner.clone(),
        };
    }
    let inner = Arc::new(make(Arc::downgrade(children)));
    map.insert(key.to_owned(), inner.clone());
    View { inner }
}

impl View {
    /// The scope of this view.
    pub fn scope(&self) -> &Scope {
        &self.inner.scope
    }

    /// The level this view registers at.
    pub fn level(&self) -> ScopeLevel {
        self.inner.scope.level()
    }

    /// The agent `name` inside this session (the same view for the same name).
    pub fn agent(&self, name: &str) -> Result<View, HostError> {
        self.child(ScopeLevel::Session, name, |s| s.agent(name))
    }

    /// The turn `id` inside this agent (the same view for the same id).
    pub fn turn(&self, id: &str) -> Result<View, HostError> {
        self.child(ScopeLevel::Agent, id, |s| s.turn(id))
    }

    fn child(
        &self,
        parent_level: ScopeLevel,
        key: &str,
        narrow: impl FnOnce(Scope) -> Scope,
    ) -> Result<View, HostError> {
        self.check_open()?;
        if self.level() != parent_level || key.is_empty() || key.chars().any(char::is_control) {
            return Err(HostError::Scope(format!(
                "cannot open {key:?} inside the {} view {}",
                self.level(),
                describe(&self.inner.scope)
            )));
        }
        let scope = narrow(self.inner.scope.clone());
        Ok(child_view(&self.inner.children, key, |siblings| {
            ViewInner::new(
                self.inner.host.clone(),
                scope,
                Arc::downgrade(&self.inner),
                siblings,
            )
        }))
    }

    /// The capabilities visible from this view (pool → session → agent →
    /// turn), as the registry has them now.
    pub(crate) fn visible(&self) -> extpool_core::Visible {
        self.inner
            .host
            .registry
            .get_visible_capabilities(&self.inner.scope)
    }

    pub(crate) fn check_open(&self) -> Result<(), HostError> {
        if self.inner.host.is_shut_down() {
            return Err(HostError::ShutDown);
        }
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(HostError::Scope(format!(
                "the view {} is closed",
                describe(&self.inner.scope)
            )));
        }
        Ok(())
    }
}

/// A scope as `pool p / session A / agent coder / turn t1`, for messages.
pub fn describe(scope: &Scope) -> String {
    let mut parts = vec![format!("pool {}", scope.pool_id)];
    for (word, id) in [
        ("session", &scope.session_id),
        ("agent", &scope.agent_name),
        ("turn", &scope.turn_id),
    ] {
        if !id.is_empty() {
            parts.push(format!("{word} {id}"));
        }
    }
    parts.join(" / ")
}
