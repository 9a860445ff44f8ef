//! A view's lifecycle: capabilities registered and unregistered at its
//! level, reconciliation on demand, its change stream, and closing it
//! with everything inside it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use extpool_catalog::Catalog;
use extpool_core::registry::ShutdownReport;
use extpool_core::{Capability, CapabilityKind, ScopeLevel};
use futures::{Stream, StreamExt};

use super::{HostEvent, View};
use crate::error::HostError;
use crate::health::HealthEvent;

impl View {
    /// Changes of every capability visible now, and each revision this
    /// view's catalog publishes, until the stream is dropped.
    pub fn changes(&self) -> impl Stream<Item = HostEvent> + Send + 'static {
        let catalog = self.inner.catalog();
        let mut revisions = catalog.subscribe();
        revisions.mark_unchanged();
        let revisions =
            tokio_stream::wrappers::WatchStream::from_changes(revisions).map(move |number| {
                let rev = catalog.current();
                HostEvent::Revision {
                    number,
                    tools: rev.all_tools().count(),
                    commands: rev.all_commands().count(),
                    resources: rev.all_resources().count(),
                }
            });
        let changes = match self
            .inner
            .host
            .registry
            .merge_change_streams(&self.inner.scope)
        {
            Some(merged) => merged.map(HostEvent::Change).boxed(),
            None => futures::stream::empty().boxed(),
        };
        let health =
            tokio_stream::wrappers::BroadcastStream::new(self.inner.host.health.subscribe())
                .filter_map(|event| async move {
                    match event.ok()? {
                        HealthEvent::Degraded(d) => Some(HostEvent::Degraded {
                            capability: d.capability,
                            reason: d.reason,
                        }),
                        HealthEvent::Recovered { capability } => {
                            Some(HostEvent::Recovered { capability })
                        }
                    }
                });
        futures::stream::select(futures::stream::select(changes, revisions), health)
    }

    /// Registers `cap` at this view's level: it is visible here and in the
    /// views inside this one, its tools join this view's catalog (published
    /// before this returns), and it is shut down when the view closes.
    pub async fn register(&self, cap: Arc<dyn Capability>) -> Result<(), HostError> {
        self.check_open()?;
        let host = &self.inner.host;
        let server = (cap.kind() == CapabilityKind::McpServer).then(|| cap.id().to_owned());
        host.registry
            .register(cap, self.level(), &self.inner.scope, None)?;
        if let Some(name) = server
            && self.level() == ScopeLevel::Session
        {
            host.runtime.hold(&name, &self.inner.scope.session_id);
        }
        let catalog = if self.level() == ScopeLevel::Pool {
            host.catalog.clone()
        } else {
            self.overlay()?
        };
        catalog.reconcile_now().await;
        Ok(())
    }

    /// Runs a reconciliation cycle of the pool catalog — consulting every
    /// discovery source first (the configuration read again, ToolHive
    /// asked now) — and, when this view has capabilities of its own, of
    /// its catalog; returns the outcome of this view's catalog (whether it
    /// published a new revision).
    pub async fn reconcile_now(&self) -> extpool_catalog::CycleOutcome {
        let host = &self.inner.host;
        host.rediscover();
        let pool = host.catalog.reconcile_now().await;
        let own = self.inner.overlay.lock().clone();
        match own {
            Some(overlay) => {
                let mut mine = overlay.reconcile_now().await;
                mine.changed |= pool.changed;
                mine
            }
            None => pool,
        }
    }

    /// Unregisters capability `id` from this view's level and shuts it down.
    pub async fn unregister(&self, id: &str) -> Result<(), HostError> {
        self.check_open()?;
        let host = &self.inner.host;
        host.registry
            .unregister_and_shutdown(id, self.level(), &self.inner.scope)
            .await?;
        if self.level() == ScopeLevel::Session {
            host.runtime.release(Some(id), &self.inner.scope.session_id);
        }
        let catalog = if self.level() == ScopeLevel::Pool {
            Some(host.catalog.clone())
        } else {
            self.inner.overlay.lock().clone()
        };
        if let Some(catalog) = catalog {
            catalog.reconcile_now().await;
        }
        Ok(())
    }

    /// The cached status of the sources this view registered itself (a
    /// session's own servers): listed or not, and why not; empty when it
    /// has none. Never probes upstream.
    pub fn own_sources(&self) -> Vec<extpool_catalog::SourceStatus> {
        let own = self.inner.overlay.lock().clone();
        own.map(|catalog| catalog.status().sources)
            .unwrap_or_default()
    }

    /// This view's overlay catalog, created on first need.
    fn overlay(&self) -> Result<Arc<Catalog>, HostError> {
        let mut slot = self.inner.overlay.lock();
        if let Some(own) = slot.clone() {
            return Ok(own);
        }
        let host = &self.inner.host;
        let overlay = Arc::new(Catalog::new(host.catalog_config.clone())?);
        overlay.start_overlay(
            &host.catalog,
            host.registry.clone(),
            self.inner.scope.clone(),
        )?;
        *slot = Some(overlay.clone());
        Ok(overlay)
    }

    /// Closes the view: shuts down what it and the views inside it
    /// registered (innermost first, each within the RFC's timeout) and stops
    /// their catalogs. Pool connections stay open for everyone else. A view
    /// stays open until closed (dropping a handle closes nothing): close
    /// every turn, agent and session you open.
    ///
    /// The pool view never closes (its capabilities are everyone's): use
    /// [`crate::Host::shutdown`].
    pub async fn close(&self) {
        self.close_with_report().await;
    }

    /// [`View::close`], reporting each capability it shut down (innermost
    /// first); empty when the view was already closed or is the pool view.
    pub async fn close_with_report(&self) -> ShutdownReport {
        if self.level() == ScopeLevel::Pool || self.inner.closed.swap(true, Ordering::AcqRel) {
            return ShutdownReport::default();
        }
        let report = self
            .inner
            .host
            .registry
            .shutdown_within(&self.inner.scope)
            .await;
        self.inner.close_tree().await;
        if self.level() == ScopeLevel::Session {
            self.inner
                .host
                .runtime
                .release(None, &self.inner.scope.session_id);
        }
        let key = match self.level() {
            ScopeLevel::Turn => &self.inner.scope.turn_id,
            ScopeLevel::Agent => &self.inner.scope.agent_name,
            _ => &self.inner.scope.session_id,
        };
        if let Some(siblings) = self.inner.siblings.upgrade() {
            let mut map = siblings.lock();
            if map.get(key).is_some_and(|v| Arc::ptr_eq(v, &self.inner)) {
                map.remove(key);
            }
        }
        report
    }
}
