//! What a [`Host`] reports, read from caches only (never contacting a
//! server): its servers and their connections and logs, discovery, status,
//! sources, skill roots, what the catalog dropped, and the plugins found.
//! Front ends render these rows.

use std::sync::Arc;

use extpool_catalog::CatalogStatus;

use super::Host;
use crate::info::{SourceInfo, SourcesReport};
use crate::servers;
use crate::status::{HostStatus, ServerInfo};

impl Host {
    /// Every server — configured, then discovered — and its state now.
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.inner
            .runtime
            .entries()
            .iter()
            .map(servers::ServerEntry::shown)
            .collect()
    }

    /// Whether a server of this name (ignoring case) is configured or
    /// discovered now: a name a session's own server may not take.
    pub fn has_server(&self, name: &str) -> bool {
        self.inner.runtime.has(name)
    }

    /// The running server (configured or discovered) whose tools are named
    /// `name` (`mcp__<namespace>__…`, the namespace its `prefix`, else its
    /// name); `None` for another name.
    pub fn server_of_tool(&self, name: &str) -> Option<String> {
        self.inner
            .runtime
            .entries()
            .into_iter()
            .find(|e| {
                let namespace = e.written.prefix.as_deref().unwrap_or(&e.info.name);
                extpool_catalog::names::in_namespace(name, namespace)
            })
            .map(|e| e.info.name)
    }

    /// Each running server's connection now: process, protocol version,
    /// open or closed, requests on it, its stderr tail (servers with no
    /// client yet are left out). Never contacts a server.
    pub fn server_connections(&self) -> Vec<crate::ServerConnection> {
        self.inner.runtime.read(crate::connections::of)
    }

    /// Each server's log: its stderr lines and extpool's lines about it
    /// (`extpool logs`).
    pub fn server_logs(&self) -> &Arc<crate::server_logs::ServerLogs> {
        &self.inner.logs
    }

    /// The cached state of each discovery source (configuration edits,
    /// ToolHive): last success, last error, stale. Never consults one.
    pub fn discovery(&self) -> Vec<crate::discovery::DiscoveryStatus> {
        self.inner
            .reconciler
            .as_ref()
            .map(|r| r.statuses())
            .unwrap_or_default()
    }

    /// The discovery statuses and the running servers, read together.
    fn discovery_and_servers(
        &self,
    ) -> (
        Vec<crate::discovery::DiscoveryStatus>,
        Vec<servers::ServerEntry>,
    ) {
        match &self.inner.reconciler {
            Some(r) => r.snapshot(),
            None => (Vec::new(), self.inner.runtime.entries()),
        }
    }

    /// Changes each time a discovery source was consulted or the running
    /// servers changed (for a display, or a test, that waits on it
    /// instead of polling [`Host::discovery`]). Without discovery, never.
    pub fn discovery_updates(&self) -> tokio::sync::watch::Receiver<u64> {
        match &self.inner.reconciler {
            Some(r) => r.updates(),
            None => tokio::sync::watch::channel(0).1,
        }
    }

    /// Has every discovery source consulted at the next reconciliation
    /// cycle (a refresh: the configuration read again, ToolHive asked now).
    pub fn rediscover(&self) {
        self.inner.rediscover();
    }

    /// The host's state, from caches only (never contacts a server).
    pub fn status(&self) -> HostStatus {
        self.status_of(self.servers(), self.inner.catalog.status())
    }

    fn status_of(&self, servers: Vec<ServerInfo>, catalog: CatalogStatus) -> HostStatus {
        let diagnostics = self
            .inner
            .manager
            .diagnostics()
            .iter()
            .map(|d| d.to_string())
            .collect();
        HostStatus {
            servers,
            catalog,
            skills: self.inner.manager.local_skills().len(),
            diagnostics,
        }
    }

    /// Each skill root: skills loaded, skills skipped for errors, bounds hit.
    pub fn skill_root_reports(&self) -> Vec<crate::SkillRootReport> {
        crate::skill_roots::reports(&self.inner)
    }

    /// What the catalog refused to publish (malformed or duplicate names),
    /// by source: tools a server advertised that no caller can see.
    pub fn dropped(&self) -> Vec<extpool_catalog::Diagnostic> {
        self.inner.catalog.current().diagnostics().to_vec()
    }

    /// What each running server listed that could not be read, and so was
    /// not published (a tool `{"name": 5}`): the server and one line naming
    /// the list, the entry's place and name and the field at fault.
    pub fn unreadable_entries(&self) -> Vec<(String, String)> {
        crate::sources::unreadable(&self.inner.runtime.entries())
    }

    /// Every source with its state: servers, skill-embedded servers, skill
    /// roots and the catalog (what `extpool list sources` shows).
    pub fn sources(&self) -> Vec<SourceInfo> {
        self.sources_report().sources
    }

    /// The host's status, its sources and its discovery sources read
    /// together, so that they agree: a server a discovery source adds is
    /// in all three or in none, never beside the failure it replaces (what
    /// `ListMcpSources` answers).
    pub fn sources_report(&self) -> SourcesReport {
        // Discovery and the servers first, then the catalog: a change
        // published meanwhile holds the catalog until its status is
        // written, so the catalog read is never older than the servers.
        let (discovery, entries) = self.discovery_and_servers();
        let catalog = self.inner.catalog.status();
        let sources = crate::sources::rows(&self.inner, &entries, &discovery, &catalog);
        let servers = entries.iter().map(servers::ServerEntry::shown).collect();
        SourcesReport {
            status: self.status_of(servers, catalog),
            sources,
            discovery,
        }
    }

    /// Every plugin found — extpool's own, then those Claude Code, Codex
    /// and Gemini CLI installed — enabled or not, with what each provides
    /// (empty when plugins are off).
    pub fn plugins(&self) -> Vec<crate::plugins::PluginInfo> {
        self.found_plugins()
            .map(|f| crate::plugins::plugins(&f))
            .unwrap_or_default()
    }

    /// The subagent definitions of the enabled plugins, for the agent
    /// library (system prompt, tool allowlist, model hint).
    pub fn agents(&self) -> Vec<crate::plugins::AgentInfo> {
        self.found_plugins()
            .map(|f| crate::plugins::agents(&f))
            .unwrap_or_default()
    }

    /// What plugin discovery found wrong outside any one plugin, and the
    /// plugin servers not served, one line each.
    pub fn plugin_problems(&self) -> Vec<String> {
        self.found_plugins()
            .map(|f| crate::plugins::problems(&f))
            .unwrap_or_default()
    }

    fn found_plugins(&self) -> Option<crate::plugins::Found> {
        self.inner.plugins.as_ref().map(|p| p.found())
    }
}
