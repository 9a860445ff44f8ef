//! [`Catalog`]: the handle front ends hold — configuration, the published
//! revision, the reconciliation loop, status and change notifications.

use std::sync::Arc;

use extpool_core::{ExtensionRegistry, Scope, ToolResult};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::config::CatalogConfig;
use crate::dispatch::CallError;
use crate::membership::Membership;
use crate::permissions::{PermissionError, PermissionsConfig};
use crate::prompts::CommandError;
use std::sync::atomic::Ordering;

use crate::reconcile::{self, CycleOutcome, Shared};
use crate::revision::CatalogRevision;
use crate::services::Services;
use crate::status::{CatalogStatus, ReconcileState};

/// Why a catalog could not be created or started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// A permission rule is malformed.
    #[error(transparent)]
    Permissions(#[from] PermissionError),
    /// A configured namespace is malformed.
    #[error("invalid namespace for server {server:?}: {error}")]
    Namespace {
        /// The server id.
        server: String,
        /// What is wrong (shown in the message, so not a `source()`).
        error: crate::names::NameError,
    },
    /// `start` was called twice.
    #[error("the catalog is already started")]
    AlreadyStarted,
    /// `start` was called outside a tokio runtime.
    #[error("the catalog must be started inside a tokio runtime")]
    NoRuntime,
}

/// The model-facing catalog of one scope.
///
/// Create it with [`Catalog::new`], start its reconciliation loop with
/// [`Catalog::start`], and pin a revision per operation with
/// [`Catalog::current`]. Dropping the catalog stops the loop.
pub struct Catalog {
    shared: Arc<Shared>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("revision", &self.current().number())
            .finish()
    }
}

impl Catalog {
    /// A catalog with the empty revision 0; nothing is listed until [`Catalog::start`].
    pub fn new(config: CatalogConfig) -> Result<Self, CatalogError> {
        for (server, namespace) in &config.namespaces {
            crate::names::validate_namespace(namespace).map_err(|error| {
                CatalogError::Namespace {
                    server: server.clone(),
                    error,
                }
            })?;
        }
        let services = Arc::new(Services::new(&config)?);
        Ok(Self {
            shared: Arc::new(Shared::new(services, config.reconcile)),
            task: Mutex::new(None),
        })
    }

    /// Starts the reconciliation loop over the capabilities `registry`
    /// shows to `scope`. The first cycle runs right away.
    pub fn start(
        &self,
        registry: Arc<ExtensionRegistry>,
        scope: Scope,
    ) -> Result<(), CatalogError> {
        self.start_with_membership(registry, scope, None)
    }

    /// [`Catalog::start`] with a membership provider (discovery): each
    /// cycle first asks it which capabilities to add and remove, and
    /// publishes the change together with the revision built with it (see
    /// [`crate::membership`]). The loop also wakes when the provider is due.
    pub fn start_with_membership(
        &self,
        registry: Arc<ExtensionRegistry>,
        scope: Scope,
        membership: Option<Arc<dyn Membership>>,
    ) -> Result<(), CatalogError> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| CatalogError::NoRuntime)?;
        let mut task = self.task.lock();
        if task.is_some() {
            return Err(CatalogError::AlreadyStarted);
        }
        self.shared.mark_started();
        let _ = self.shared.scope.set(scope.clone());
        *task = Some(handle.spawn(reconcile::run(
            self.shared.clone(),
            registry,
            scope,
            None,
            membership,
        )));
        Ok(())
    }

    /// Starts this catalog as an overlay of `base` (a session's, agent's or
    /// turn's view over the pool's catalog): it lists only the capabilities
    /// `scope` sees that `base` does not already dispatch to, and each of its
    /// revisions references `base`'s current revision instead of copying
    /// its tables. A new base revision republishes the overlay. This
    /// catalog's permissions apply to its own tools; the base's tools keep
    /// the base's decisions.
    pub fn start_overlay(
        &self,
        base: &Catalog,
        registry: Arc<ExtensionRegistry>,
        scope: Scope,
    ) -> Result<(), CatalogError> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| CatalogError::NoRuntime)?;
        let mut task = self.task.lock();
        if task.is_some() {
            return Err(CatalogError::AlreadyStarted);
        }
        self.shared
            .current
            .store(Arc::new(CatalogRevision::empty_overlay(
                self.shared.services.clone(),
                base.current(),
            )));
        self.shared.mark_started();
        let _ = self.shared.scope.set(scope.clone());
        *task = Some(handle.spawn(reconcile::run(
            self.shared.clone(),
            registry,
            scope,
            Some(base.shared.clone()),
            None,
        )));
        Ok(())
    }

    /// The published revision. Hold the `Arc` for the whole operation: that
    /// is what pins it.
    pub fn current(&self) -> Arc<CatalogRevision> {
        self.shared.current.load_full()
    }

    /// Notified with each newly published revision number.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.revisions.subscribe()
    }

    /// Notified after each reconciliation cycle (successful or not), once
    /// its status is recorded: what [`Catalog::status`] says may have changed.
    pub fn cycles(&self) -> watch::Receiver<u64> {
        self.shared.cycles.subscribe()
    }

    /// Waits until the cached status satisfies `holds`, looking again after
    /// each reconciliation cycle (and once at once); returns that status.
    /// Unbounded: wrap it in a timeout where the condition may never hold.
    pub async fn status_when(
        &self,
        mut holds: impl FnMut(&CatalogStatus) -> bool,
    ) -> CatalogStatus {
        let mut cycles = self.cycles();
        loop {
            cycles.borrow_and_update();
            let status = self.status();
            if holds(&status) || cycles.changed().await.is_err() {
                return status;
            }
        }
    }

    /// Waits until a revision numbered at least `number` is published.
    pub async fn wait_for_revision(&self, number: u64) -> Arc<CatalogRevision> {
        let mut rx = self.subscribe();
        // The sender lives in `self`, so `wait_for` only ends on success.
        let _ = rx.wait_for(|n| *n >= number).await;
        self.current()
    }

    /// Waits until the loop has finished at least one cycle and has no
    /// work in hand (idle, retry scheduled, or stopped); returns the status.
    /// Returns at once when the loop was never started.
    pub async fn settled(&self) -> CatalogStatus {
        let mut cycles = self.shared.cycles.subscribe();
        loop {
            let status = self.status();
            if status.state == ReconcileState::NotStarted {
                return status;
            }
            let quiet = matches!(
                status.state,
                ReconcileState::Idle
                    | ReconcileState::RetryScheduled { .. }
                    | ReconcileState::Stopped
            );
            if *cycles.borrow_and_update() > 0 && quiet {
                return status;
            }
            if cycles.changed().await.is_err() {
                return self.status();
            }
        }
    }

    /// Replaces the permission rules (the configuration's `permissions`
    /// changed while serving): the next cycle's revision is built with
    /// them, and published even when nothing else changed. Refused, the
    /// rules in force unchanged, when they do not compile.
    pub fn set_permissions(&self, config: PermissionsConfig) -> Result<(), PermissionError> {
        let compiled = crate::permissions::Permissions::new(config)?;
        self.shared.services.set_permissions(compiled);
        self.request_reconcile();
        Ok(())
    }

    /// Asks for a reconciliation (after a configuration file changed, say)
    /// without waiting for it: coalesced with any other pending trigger, it
    /// starts after the coalescing window.
    pub fn request_reconcile(&self) {
        self.shared.wake.notify_one();
    }

    /// Runs a reconciliation cycle that starts after this call and returns
    /// what it did (a cycle already listing when this is called does not
    /// count: it may have missed the change the caller made). The cycle
    /// starts at once, without the coalescing window, and covers whatever
    /// else was pending (an explicit refresh: `RefreshMcpSources`, the
    /// `/v1` refresh, a view's registration). Returns the
    /// last outcome at once when the loop is stopped or was never started.
    pub async fn reconcile_now(&self) -> CycleOutcome {
        let mut served = self.shared.served.subscribe();
        if self.status().state == ReconcileState::NotStarted {
            return *served.borrow();
        }
        let ticket = self.shared.requested.fetch_add(1, Ordering::AcqRel) + 1;
        self.shared.wake.notify_one();
        // The sender lives in `self`, so `wait_for` only ends on success.
        match served.wait_for(|o| o.ticket >= ticket).await {
            Ok(outcome) => *outcome,
            Err(_) => CycleOutcome::default(),
        }
    }

    /// The cached status of the loop and every source; never probes upstream.
    pub fn status(&self) -> CatalogStatus {
        self.shared.status()
    }

    /// Calls a tool on the current revision (pinned for this call).
    pub async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolResult, CallError> {
        self.current().call(name, args).await
    }

    /// Runs a command line on the current revision (pinned for this call).
    pub async fn run_command(&self, line: &str) -> Result<String, CommandError> {
        self.current().run_command(line).await
    }

    /// Stops the loop and waits for it to end. Published revisions stay readable.
    pub async fn shutdown(&self) {
        self.shared.cancel.cancel();
        let task = self.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for Catalog {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
    }
}
