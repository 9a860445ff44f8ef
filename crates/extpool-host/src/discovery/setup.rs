//! Assembling discovery at start-up: the sources the options ask for, the
//! reconciler over them, and the watcher of the configuration files.

use std::sync::{Arc, Weak};

use extpool_catalog::Catalog;
use extpool_config::{Loaded, Places};
use extpool_mcp::SessionConnectionPool;
use extpool_skills::watch::SkillWatcher;

use super::files::{ConfigFiles, WATCH_DEBOUNCE};
use super::runtime::Runtime;
use super::toolhive::ToolHiveSource;
use super::{CONFIG_SOURCE, Discovered, DiscoverySource, Reconciler, Timing};
use crate::error::HostError;
use crate::options::{DiscoveryOptions, ServerSelection};

/// What `assemble` is given.
pub(crate) struct Assembly<'a> {
    pub options: DiscoveryOptions,
    pub selection: &'a ServerSelection,
    pub loaded: &'a Loaded,
    pub places: &'a Places,
    pub pool: &'a SessionConnectionPool,
    pub runtime: &'a Arc<Runtime>,
    pub exclusions: &'a crate::servers::Exclusions,
    pub plugins: Option<Arc<crate::plugins::Live>>,
}

/// The reconciler, when discovery was asked for, and the files to watch.
pub(crate) struct Found {
    pub reconciler: Option<Arc<Reconciler>>,
    files: Option<ConfigFiles>,
}

/// Builds the sources of `options` (none unless every server is selected:
/// a command that needs one server discovers nothing).
pub(crate) fn assemble(a: Assembly<'_>) -> Result<Found, HostError> {
    let nothing = Found {
        reconciler: None,
        files: None,
    };
    if *a.selection != ServerSelection::All {
        return Ok(nothing);
    }
    let timing = Timing::from(&a.loaded.config.discovery);
    let mut sources: Vec<(Arc<dyn DiscoverySource>, Option<Discovered>)> = Vec::new();
    let mut files = None;
    if let Some(reload) = a.options.reload {
        let source = ConfigFiles::new(
            reload.files,
            a.places.clone(),
            reload.overrides,
            a.loaded,
            timing.timeout,
            a.exclusions.clone(),
            a.plugins.clone(),
        );
        let first = source.initial(a.loaded);
        sources.push((Arc::new(source.clone()), Some(first)));
        files = Some(source);
    }
    if let Some(toolhive) = a.options.toolhive {
        let http = a.pool.config().client.http_client().clone();
        let source = ToolHiveSource::new(&toolhive.url, toolhive.group, http, timing.timeout)
            .map_err(|e| HostError::Discovery(format!("ToolHive URL {e}")))?;
        sources.push((Arc::new(source), None));
    }
    if sources.is_empty() {
        return Ok(nothing);
    }
    Ok(Found {
        reconciler: Some(Arc::new(Reconciler::new(
            sources,
            a.runtime.clone(),
            a.pool.clone(),
            timing,
        ))),
        files,
    })
}

impl Found {
    /// Starts watching the configuration files: a change has the
    /// reconciler read them again at a cycle it asks `catalog` for.
    pub(crate) fn watch(&self, catalog: &Arc<Catalog>) -> Option<SkillWatcher> {
        let (files, reconciler) = (self.files.as_ref()?, self.reconciler.as_ref()?);
        files.apply_permissions_to(catalog);
        let weak_catalog: Weak<Catalog> = Arc::downgrade(catalog);
        let weak_reconciler = Arc::downgrade(reconciler);
        let spawned = SkillWatcher::spawn(files.watched(), WATCH_DEBOUNCE, move |_batch| {
            let (Some(reconciler), Some(catalog)) =
                (weak_reconciler.upgrade(), weak_catalog.upgrade())
            else {
                return;
            };
            tracing::debug!("discovery: a configuration file changed");
            reconciler.mark(Some(CONFIG_SOURCE));
            catalog.request_reconcile();
        });
        match spawned {
            Ok(watcher) => Some(watcher),
            Err(e) => {
                tracing::warn!(
                    "cannot watch the configuration files; edits apply on a refresh only: {e}"
                );
                None
            }
        }
    }
}
