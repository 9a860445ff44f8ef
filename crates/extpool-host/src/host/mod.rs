//! [`Host`]: a configuration turned into running extensions.
//!
//! Shutdown follows the RFC: the catalogs stop first (nothing re-lists a
//! closing server), then the registry shuts capabilities down turn → agent
//! → session → pool, each within its timeout, and last the pool closes
//! every connection (stdio servers' whole process groups).
//!
//! This module holds the [`Host`] itself: its views, its parts and its
//! shutdown. Each other job has a module of its own: `start` assembles a
//! host from a configuration, `reports` reads its state from caches for
//! front ends, `restart` restarts one server, and `callers` makes the
//! capabilities of a caller's own servers (per-session, per-user and
//! delegated).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use extpool_catalog::Catalog;
use extpool_config::{Loaded, Places};
use extpool_core::Capability;
use extpool_core::registry::ShutdownReport;
use extpool_skills::SkillManagerCap;
use parking_lot::Mutex;

use crate::error::HostError;
use crate::shared::HostInner;
use crate::view::{View, ViewInner, Views, child_view};

mod callers;
mod reports;
mod restart;
mod start;

pub use crate::shared::SKILLS_ID;

/// The extension host: configured MCP servers, skills and commands,
/// running, behind scoped [`View`]s. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
    /// Open sessions, kept until closed (views hold no reference back here).
    sessions: Arc<Views>,
    pool_view: Arc<Mutex<Weak<ViewInner>>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("pool", &self.inner.pool_scope.pool_id)
            .field("revision", &self.inner.catalog.current().number())
            .finish()
    }
}

impl Host {
    /// The view of session `id` (the same view while it is open). Its
    /// agents and turns are opened from it.
    pub fn session(&self, id: &str) -> Result<View, HostError> {
        if self.inner.is_shut_down() {
            return Err(HostError::ShutDown);
        }
        if id.is_empty() || id.len() > 256 || id.chars().any(char::is_control) {
            return Err(HostError::Scope(format!(
                "invalid session id {id:?}: 1 to 256 characters, no control characters"
            )));
        }
        let scope = self.inner.pool_scope.clone().session(id);
        Ok(child_view(&self.sessions, id, |siblings| {
            ViewInner::new(self.inner.clone(), scope, Weak::new(), siblings)
        }))
    }

    /// The pool-level view: what every session sees. Capabilities
    /// registered here (an embedding program's own tools) are shared by all.
    pub fn pool(&self) -> View {
        let mut slot = self.pool_view.lock();
        if let Some(inner) = slot.upgrade() {
            return View { inner };
        }
        let inner = Arc::new(ViewInner::new(
            self.inner.clone(),
            self.inner.pool_scope.clone(),
            Weak::new(),
            Weak::new(),
        ));
        *slot = Arc::downgrade(&inner);
        View { inner }
    }

    /// The configuration as loaded (files read, servers, diagnostics).
    pub fn config(&self) -> &Loaded {
        &self.inner.loaded
    }

    /// The places configs and project skills were found from.
    pub fn places(&self) -> &Places {
        &self.inner.places
    }

    /// The pool catalog (its revision is shared by every session).
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// Which capabilities are degraded (their server down after a
    /// reconnect), shared by every view of this host.
    pub fn health(&self) -> &crate::health::Health {
        &self.inner.health
    }

    /// The skill manager (local skills, hosted skills, embedded servers).
    pub fn skills(&self) -> &Arc<SkillManagerCap> {
        &self.inner.manager
    }

    /// The skill roots searched, highest precedence first.
    pub fn skill_roots(&self) -> Vec<PathBuf> {
        self.inner.skill_roots()
    }

    /// The mark this host's pool puts on what it sends its servers, which
    /// a gateway checks on what reaches it ([`extpool_mcp::via`]).
    pub fn via(&self) -> &extpool_mcp::Via {
        &self.inner.pool.config().client.via
    }

    /// Shuts everything down in the RFC's order and reports each capability.
    /// Views stop working; later calls return [`HostError::ShutDown`].
    pub async fn shutdown(&self) -> ShutdownReport {
        if self.inner.shut.swap(true, Ordering::AcqRel) {
            return ShutdownReport::default();
        }
        let views: Vec<Arc<ViewInner>> = self.sessions.lock().drain().map(|(_, v)| v).collect();
        for view in views {
            view.close_tree().await;
        }
        drop(self.inner.watcher.lock().take());
        self.inner.catalog.shutdown().await;
        if let Some(r) = &self.inner.reconciler {
            r.shutdown().await;
        }
        let report = self.inner.registry.shutdown().await;
        self.inner.pool.shutdown().await;
        report
    }

    /// Registers `cap` at pool scope (see [`View::register`]).
    pub async fn register(&self, cap: Arc<dyn Capability>) -> Result<(), HostError> {
        self.pool().register(cap).await
    }
}
