//! [`HostInner`]: what every view of one host shares — the configuration,
//! the registry, the pool, the catalogs, the skill manager, the running
//! servers — and the few questions about it that several rooms ask.
//!
//! The host's front door ([`crate::Host`]) and its views ([`crate::View`])
//! both stand on this module; it knows neither, so the host's modules
//! depend on each other one way: `host` → `view` → `shared`, and the
//! source and skill-root rows read only this.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use extpool_catalog::{Catalog, CatalogConfig};
use extpool_config::{Loaded, Places};
use extpool_core::{ExtensionRegistry, Scope};
use extpool_mcp::SessionConnectionPool;
use extpool_skills::{DiscoveryConfig, SkillManagerCap};
use parking_lot::Mutex;

use crate::discovery::Reconciler;
use crate::discovery::runtime::Runtime;
use crate::status::ServerState;

/// The id of the skill manager in the registry and the catalog.
pub const SKILLS_ID: &str = "skills";

/// What every view of one host shares.
pub(crate) struct HostInner {
    pub loaded: Loaded,
    pub places: Places,
    pub registry: Arc<ExtensionRegistry>,
    pub pool: SessionConnectionPool,
    pub catalog: Arc<Catalog>,
    pub catalog_config: CatalogConfig,
    pub manager: Arc<SkillManagerCap>,
    pub pool_scope: Scope,
    pub health: crate::health::Health,
    /// The checks of every call and result ([`crate::guardrails`]).
    pub guardrails: crate::guardrails::Shared,
    /// The policy of a view that has none of its own, nor a parent with one.
    pub policy: Arc<crate::policy::ViewPolicy>,
    pub discovery: DiscoveryConfig,
    /// Every server, configured and discovered, as it runs now.
    pub runtime: Arc<Runtime>,
    /// Each server's log (`extpool logs`).
    pub logs: Arc<crate::server_logs::ServerLogs>,
    /// Discovery (configuration edits, ToolHive), when the host was asked for it.
    pub reconciler: Option<Arc<Reconciler>>,
    /// Watches the configuration files for the reconciler.
    pub watcher: Mutex<Option<extpool_skills::watch::SkillWatcher>>,
    /// The plugins and command files served, when they are.
    pub plugins: Option<Arc<crate::plugins::Live>>,
    /// Each caller's delegated tokens, which its servers' sessions send.
    pub delegated: Arc<extpool_auth::delegated::DelegatedTokens>,
    pub shut: AtomicBool,
}

impl HostInner {
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut.load(Ordering::Acquire)
    }

    /// Why `server` failed to start, when it did.
    pub(crate) fn failure_of(&self, server: &str) -> Option<String> {
        self.runtime
            .entries()
            .iter()
            .find_map(|s| match &s.info.state {
                ServerState::Failed { reason } if s.info.name == server => Some(reason.clone()),
                _ => None,
            })
    }

    /// Has every discovery source consulted at the next cycle.
    pub(crate) fn rediscover(&self) {
        if let Some(r) = &self.reconciler {
            r.mark(None);
        }
    }

    /// The plugin that provides running server `server`, if one does.
    pub(crate) fn plugin_of_server(&self, server: &str) -> Option<String> {
        self.runtime.read(|entries| {
            entries
                .iter()
                .find(|e| e.info.name == server)
                .and_then(|e| e.info.plugin.clone())
        })
    }

    /// The plugin of every running server a plugin provides.
    pub(crate) fn plugin_servers(&self) -> std::collections::HashMap<String, String> {
        self.runtime.read(|entries| {
            entries
                .iter()
                .filter_map(|e| Some((e.info.name.clone(), e.info.plugin.clone()?)))
                .collect()
        })
    }

    /// The plugin that provides command `name` of source `source` (the
    /// plugins' skills or the command files), if one does.
    pub(crate) fn plugin_of_command(&self, source: &str, name: &str) -> Option<String> {
        let live = self.plugins.as_ref()?;
        match source {
            crate::plugins::PLUGIN_SKILLS_ID => live.skills.get(name).map(|s| s.plugin),
            crate::plugins::COMMANDS_ID => live.commands.get(name).and_then(|c| c.plugin),
            _ => None,
        }
    }

    /// The servers that failed to start.
    pub(crate) fn failed_servers(&self) -> Vec<String> {
        self.runtime
            .entries()
            .iter()
            .filter(|s| matches!(s.info.state, ServerState::Failed { .. }))
            .map(|s| s.info.name.clone())
            .collect()
    }

    /// The skill roots searched, highest precedence first.
    pub(crate) fn skill_roots(&self) -> Vec<PathBuf> {
        self.discovery.roots().into_iter().map(|r| r.path).collect()
    }
}
