//! The catalog of one invocation: the servers that started are registered
//! in an [`ExtensionRegistry`] at pool scope, and an `extpool-catalog`
//! [`Catalog`] reconciles them into a revision. Listing, calling and
//! running commands go through that revision (pinned per operation);
//! `list sources` shows the catalog's cached status.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use extpool_catalog::{Catalog, CatalogConfig, CatalogStatus, ReconcileConfig};
use extpool_config::Loaded;
use extpool_core::{Capability, ExtensionRegistry, Scope, ScopeLevel};

/// How long the first reconciliation may take before the CLI gives up waiting.
const FIRST_REVISION: Duration = Duration::from_secs(120);

/// The registry and the catalog over it.
pub struct CliCatalog {
    /// Capabilities visible to the CLI's scope.
    pub registry: Arc<ExtensionRegistry>,
    /// The scope of this invocation.
    pub scope: Scope,
    /// The catalog.
    pub catalog: Catalog,
}

impl CliCatalog {
    /// Registers `caps` and waits for the first reconciliation.
    pub async fn open(loaded: &Loaded, caps: Vec<Arc<dyn Capability>>) -> Result<Self> {
        let registry = Arc::new(ExtensionRegistry::default());
        let scope = Scope::pool("cli");
        for cap in caps {
            let id = cap.id().to_owned();
            registry
                .register(cap, ScopeLevel::Pool, &scope, None)
                .with_context(|| format!("cannot register {id}"))?;
        }
        let ext = &loaded.config.extensions;
        let namespaces = loaded
            .config
            .mcp_servers
            .iter()
            .filter_map(|(name, c)| c.prefix.clone().map(|p| (name.clone(), p)))
            .collect();
        let config = CatalogConfig {
            permissions: loaded.config.permissions.clone(),
            namespaces,
            resource_tools: ext.resource_tools,
            prompts: ext.prompt_commands,
            limits: ext.result_limits,
            reconcile: ReconcileConfig {
                coalesce_ms: 20,
                ..ReconcileConfig::default()
            },
            ..CatalogConfig::default()
        };
        let catalog = Catalog::new(config)?;
        catalog.start(registry.clone(), scope.clone())?;
        let _ = tokio::time::timeout(FIRST_REVISION, catalog.settled()).await;
        Ok(Self {
            registry,
            scope,
            catalog,
        })
    }

    /// The cached status (never probes a server).
    pub fn status(&self) -> CatalogStatus {
        self.catalog.status()
    }

    /// Stops the reconciliation loop.
    pub async fn shutdown(&self) {
        self.catalog.shutdown().await;
    }
}
