//! [`Host`]: a configuration turned into running extensions.
//!
//! Start-up, in order: load the configuration; discover skills (on a
//! blocking thread) while every selected server starts in parallel through
//! the shared [`SessionConnectionPool`]; build the [`SkillManagerCap`]
//! (local skills, the servers' hosted skills, skill-embedded servers built
//! through the pool); register the manager, then each usable server, at
//! pool scope of one [`ExtensionRegistry`]; start the pool [`Catalog`] over
//! that scope and wait for its first cycle. Every front end and agent
//! runtime stands on this one assembly.
//!
//! Shutdown follows the RFC: the catalogs stop first (nothing re-lists a
//! closing server), then the registry shuts capabilities down turn → agent
//! → session → pool, each within its timeout, and last the pool closes
//! every connection (stdio servers' whole process groups).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use extpool_catalog::{Catalog, CatalogConfig, CatalogStatus};
use extpool_config::{ConfigError, LoadRequest, Loaded, Places};
use extpool_core::registry::ShutdownReport;
use extpool_core::{Capability, ExtensionRegistry, Scope, ScopeLevel};
use extpool_mcp::{McpServerCap, McpServerConfig, SessionConnectionPool};
use extpool_skills::SkillManagerCap;
use parking_lot::Mutex;

use crate::discovery::runtime::Runtime;
use crate::embedded::PoolFactory;
use crate::error::HostError;
use crate::info::{SourceInfo, SourcesReport};
use crate::options::{ConfigSource, HostOptions, PluginOptions};
use crate::servers;
use crate::shared::HostInner;
use crate::status::{HostStatus, ServerInfo, ServerState};
use crate::view::{View, ViewInner, Views, child_view};

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

fn load(source: ConfigSource, places: &Places) -> Result<Loaded, ConfigError> {
    match source {
        ConfigSource::Files(files) => extpool_config::load(&LoadRequest {
            files,
            places: places.clone(),
        }),
        ConfigSource::Loaded(loaded) => Ok(*loaded),
        ConfigSource::Value { config, base_dir } => {
            extpool_config::load_value(&config, &base_dir, "configuration")
        }
    }
}

impl Host {
    /// Loads the configuration, starts the selected servers in parallel
    /// (reporting each step to `options.events`), loads skills, and returns
    /// once the catalog's first cycle is done. A server that fails is
    /// reported and left out; the host works without it.
    pub async fn start(options: HostOptions) -> Result<Host, HostError> {
        let HostOptions {
            config,
            places,
            servers: selection,
            watch_skills,
            events,
            pool_id,
            relay,
            discovery: discovery_options,
            per_caller_servers,
            plugins,
            own,
        } = options;
        let exclusions = servers::Exclusions {
            per_caller: per_caller_servers,
            own,
        };
        let mut loaded = load(config, &places)?;
        let found = match plugins {
            PluginOptions::Off => None,
            PluginOptions::Found(found) => Some(*found),
            PluginOptions::Discover => {
                let (config, at) = (loaded.config.clone(), places.clone());
                let mut found =
                    tokio::task::spawn_blocking(move || crate::plugins::discover(&config, &at))
                        .await
                        .unwrap_or_else(|e| {
                            tracing::error!("plugin discovery failed: {e}");
                            crate::plugins::Found::none()
                        });
                crate::plugins::add_servers(&mut found, &mut loaded, &places);
                Some(found)
            }
        };
        let plugins = found.map(|f| Arc::new(crate::plugins::Live::new(f)));
        let guardrails = match &loaded.config.guardrails {
            Some(g) => Some(Arc::new(crate::guardrails::Guardrails::compile(
                g,
                &extpool_config::process_env,
            )?)),
            None => None,
        };
        let ext = &loaded.config.extensions;
        let registry = Arc::new(ExtensionRegistry::new(ext.into()));
        let mut pool_config = extpool_mcp::PoolConfig::from(ext);
        pool_config.client.relay = relay;
        let delegated = pool_config.client.auth.delegated.clone();
        let pool = SessionConnectionPool::new(pool_config);
        let logs = Arc::new(crate::server_logs::ServerLogs::default());
        crate::server_logs::collect_stderr(&logs, pool.stderr_lines());
        let catalog_config = CatalogConfig::from(&loaded.config);
        let catalog = Arc::new(Catalog::new(catalog_config.clone())?);

        let discovery = loaded.discovery_config(&places);
        let scan = {
            let config = discovery.clone();
            tokio::task::spawn_blocking(move || extpool_skills::discover(&config))
        };
        let servers = servers::start(&loaded, &selection, &exclusions, &pool, &events).await;
        let discovered = scan.await.unwrap_or_else(|e| {
            tracing::error!("skill discovery failed: {e}");
            extpool_skills::Discovery::default()
        });

        let mut builder = SkillManagerCap::builder(SKILLS_ID)
            .discovery(discovery.clone())
            .discovered(discovered)
            .watch(watch_skills.unwrap_or(loaded.config.skills.watch))
            .max_composition_depth(ext.max_composition_depth)
            .embedded_servers(Arc::new(PoolFactory { pool: pool.clone() }));
        for entry in &servers {
            if let (Some(cap), ServerState::Ready { .. }) = (&entry.cap, &entry.info.state) {
                builder = builder.hosted_skills(cap.clone());
            }
        }
        let manager = Arc::new(builder.build()?);

        let pool_scope = Scope::pool(pool_id);
        // The manager first: its local skills win `skill://` name clashes;
        // then the plugins' skills, then command files (a skill's command
        // wins over a command file of the same name, as in Claude Code).
        registry.register(manager.clone(), ScopeLevel::Pool, &pool_scope, None)?;
        if let Some(live) = &plugins {
            registry.register(live.skills.clone(), ScopeLevel::Pool, &pool_scope, None)?;
            registry.register(live.commands.clone(), ScopeLevel::Pool, &pool_scope, None)?;
        }
        for entry in &servers {
            if let Some(cap) = &entry.cap {
                registry.register(cap.clone(), ScopeLevel::Pool, &pool_scope, None)?;
            }
        }
        // Watcher and embedded servers' start in the background: the
        // catalog connects embedded servers as it lists them.
        {
            let manager = manager.clone();
            tokio::spawn(async move {
                if let Err(e) = manager.start().await {
                    tracing::warn!("skill manager did not start: {e}");
                }
            });
        }
        let runtime = Arc::new(Runtime::new(servers));
        let found = crate::discovery::setup::assemble(crate::discovery::setup::Assembly {
            options: discovery_options,
            selection: &selection,
            loaded: &loaded,
            places: &places,
            pool: &pool,
            runtime: &runtime,
            exclusions: &exclusions,
            plugins: plugins.clone(),
        })?;
        catalog.start_with_membership(
            registry.clone(),
            pool_scope.clone(),
            found
                .reconciler
                .clone()
                .map(|r| r as Arc<dyn extpool_catalog::Membership>),
        )?;
        let watcher = found.watch(&catalog);
        catalog.settled().await;
        let observed = Arc::downgrade(&runtime);
        crate::server_logs::watch_states(
            &logs,
            move || Some(observed.upgrade()?.read(crate::connections::observed)),
            catalog.cycles(),
            found.reconciler.as_ref().map(|r| r.updates()),
        );
        Ok(Host {
            inner: Arc::new(HostInner {
                loaded,
                places,
                registry,
                pool,
                catalog,
                catalog_config,
                manager,
                pool_scope,
                health: crate::health::Health::default(),
                guardrails,
                policy: crate::policy::ViewPolicy::open(),
                discovery,
                runtime,
                logs,
                reconciler: found.reconciler,
                watcher: Mutex::new(watcher),
                plugins,
                delegated,
                shut: AtomicBool::new(false),
            }),
            sessions: Arc::new(Mutex::new(HashMap::new())),
            pool_view: Arc::new(Mutex::new(Weak::new())),
        })
    }

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

    /// The skill roots searched, highest precedence first.
    pub fn skill_roots(&self) -> Vec<PathBuf> {
        self.inner.skill_roots()
    }

    /// The mark this host's pool puts on what it sends its servers, which
    /// a gateway checks on what reaches it ([`extpool_mcp::via`]).
    pub fn via(&self) -> &extpool_mcp::Via {
        &self.inner.pool.config().client.via
    }

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

    /// The configured server reached with a token made from each caller's
    /// (`oauth.token_exchange`, `oauth.passthrough`) whose tools are named
    /// `name`: a gateway starts it for each caller only, so before that
    /// caller's copy lists its tools only the configuration knows it.
    pub fn delegated_server_of_tool(&self, name: &str) -> Option<String> {
        let server = crate::servers::server_of(&self.inner.loaded, name)?;
        let written = self.inner.loaded.config.mcp_servers.get(&server)?;
        written
            .oauth
            .as_ref()
            .and_then(|o| o.delegation())
            .map(|_| server)
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

    /// Restarts server `name` (configured or discovered; its name ignoring
    /// case): its connection is closed — a stdio server's process exits —
    /// and made again, and the catalog lists it again. Other servers are
    /// untouched. Returns its connection afterwards.
    pub async fn restart_server(&self, name: &str) -> Result<crate::ServerConnection, HostError> {
        let entries = self.inner.runtime.entries();
        let Some(entry) = entries
            .iter()
            .find(|e| extpool_core::name::same_server_name(&e.info.name, name))
            .cloned()
        else {
            let known: Vec<&str> = entries.iter().map(|e| e.info.name.as_str()).collect();
            return Err(HostError::UnknownServer {
                name: name.to_owned(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            });
        };
        let server = entry.info.name.clone();
        let failed = |reason: String| HostError::Restart {
            server: server.clone(),
            reason,
        };
        let Some(cap) = entry.cap.clone() else {
            return Err(failed(format!(
                "it is not running ({}); fix its configuration and the gateway starts it",
                entry.info.state.word()
            )));
        };
        let client = match cap.client() {
            Some(client) => client,
            None => cap
                .ensure_client()
                .await
                .map_err(|e| failed(e.to_string()))?,
        };
        self.inner.logs.push(
            &server,
            crate::server_logs::LogKind::Extpool,
            "restart asked: closing its connection",
        );
        let restarted = client.restart().await;
        self.inner
            .logs
            .note(self.inner.runtime.read(crate::connections::observed));
        restarted.map_err(|e| failed(e.to_string()))?;
        tracing::info!(server = %server, pid = ?client.pid(), "MCP server restarted");
        self.inner.catalog.request_reconcile();
        crate::connections::of(std::slice::from_ref(&entry))
            .into_iter()
            .next()
            .ok_or_else(|| failed("it has no connection after the restart".to_owned()))
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

    /// A capability for an MCP server of the caller's own (a per-session
    /// server, say) whose connection comes from this host's pool: shared
    /// with every other capability for the same server, and closed by
    /// [`Host::shutdown`]. Register it on a view to make it visible there.
    pub fn mcp_server(
        &self,
        name: &str,
        config: McpServerConfig,
    ) -> Result<Arc<McpServerCap>, HostError> {
        let cap = McpServerCap::new(name, masking_literals(config), self.inner.pool.clone())?;
        Ok(Arc::new(cap))
    }

    /// An MCP server capability that owns its connection: when it shuts
    /// down (its view closes, or it is unregistered) the server's
    /// connection closes and its process ends, unless another capability
    /// of the same server still uses it. For servers that belong to one
    /// session, such as a gateway session's own servers.
    pub fn owned_mcp_server(
        &self,
        name: &str,
        config: McpServerConfig,
    ) -> Result<Arc<McpServerCap>, HostError> {
        let cap = McpServerCap::new(name, masking_literals(config), self.inner.pool.clone())?;
        Ok(Arc::new(cap.closing_when_released()))
    }

    /// The servers whose OAuth grant is each caller's (`oauth.per_user`;
    /// not started for everyone on a gateway), as capabilities of the
    /// caller whose owner key is `owner` (`None`: the gateway's one caller,
    /// who uses the grant of `extpool mcp login SERVER`): each with that
    /// caller's own grant and connection, shared by all its sessions. A
    /// server whose configuration cannot be resolved is left out, said in
    /// the log.
    pub fn caller_servers(&self, owner: Option<&str>) -> Vec<Arc<McpServerCap>> {
        let loaded = &self.inner.loaded;
        let mut caps = Vec::new();
        for (name, written) in &loaded.config.mcp_servers {
            if !written.enabled || !crate::servers::is_each_callers(written) {
                continue;
            }
            let mut config = match loaded.resolve_server(name, &extpool_config::process_env) {
                Some(Ok(config)) => config,
                Some(Err(e)) => {
                    tracing::warn!(server = %name, "a per-caller server cannot be resolved: {e}");
                    continue;
                }
                None => continue,
            };
            if let (Some(owner), Some(oauth)) = (owner, config.oauth.as_ref()) {
                config.oauth = Some(oauth.for_principal(owner));
            }
            match McpServerCap::new(name, masking_literals(config), self.inner.pool.clone()) {
                Ok(cap) => caps.push(Arc::new(cap)),
                Err(e) => tracing::warn!(server = %name, "a per-caller server cannot be made: {e}"),
            }
        }
        caps
    }

    /// Whether any enabled server's grant is each caller's own
    /// (`oauth.per_user`).
    pub fn has_caller_servers(&self) -> bool {
        self.inner
            .loaded
            .config
            .mcp_servers
            .values()
            .any(|c| c.enabled && crate::servers::is_each_callers(c))
    }

    /// What a login of the caller whose owner key is `owner` to per-caller
    /// server `server` uses: the server's URL and that caller's OAuth
    /// profile (`None`: no enabled server of that name has a per-user
    /// grant, or its configuration cannot be resolved).
    pub fn caller_login(
        &self,
        server: &str,
        owner: Option<&str>,
    ) -> Option<(String, extpool_auth::OAuthProfile)> {
        let loaded = &self.inner.loaded;
        let written = loaded.config.mcp_servers.get(server)?;
        if !written.enabled || !crate::servers::is_per_user(written) {
            return None;
        }
        let config = loaded
            .resolve_server(server, &extpool_config::process_env)?
            .ok()?;
        let oauth = config.oauth.as_ref()?;
        let profile = match owner {
            Some(owner) => oauth.for_principal(owner),
            None => oauth.clone(),
        };
        Some((config.url.clone()?, profile))
    }

    /// Each caller's delegated tokens (`oauth.token_exchange`,
    /// `oauth.passthrough`): the gateway puts a caller's token for a
    /// server here, under the record name of that caller's profile
    /// ([`Host::caller_profile`]), and the server's connection of that
    /// caller sends it.
    pub fn delegated_tokens(&self) -> Arc<extpool_auth::delegated::DelegatedTokens> {
        self.inner.delegated.clone()
    }

    /// The enabled servers whose credential is made from each caller's
    /// token (`oauth.token_exchange`, `oauth.passthrough`).
    pub fn delegated_servers(&self) -> Vec<String> {
        let servers = &self.inner.loaded.config.mcp_servers;
        servers
            .iter()
            .filter(|(_, c)| {
                c.enabled && c.oauth.as_ref().is_some_and(|o| o.delegation().is_some())
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The URL and OAuth profile of server `server` for the caller whose
    /// owner key is `owner`, when the server's credential is made from
    /// each caller's token (`oauth.token_exchange`, `oauth.passthrough`)
    /// and it is enabled.
    pub fn caller_profile(
        &self,
        server: &str,
        owner: &str,
    ) -> Option<(String, extpool_auth::OAuthProfile)> {
        let loaded = &self.inner.loaded;
        let written = loaded.config.mcp_servers.get(server)?;
        let delegated = written
            .oauth
            .as_ref()
            .is_some_and(|o| o.delegation().is_some());
        if !written.enabled || !delegated {
            return None;
        }
        let config = loaded
            .resolve_server(server, &extpool_config::process_env)?
            .ok()?;
        let profile = config.oauth.as_ref()?.for_principal(owner);
        Some((config.url.clone()?, profile))
    }

    /// Registers `cap` at pool scope (see [`View::register`]).
    pub async fn register(&self, cap: Arc<dyn Capability>) -> Result<(), HostError> {
        self.pool().register(cap).await
    }
}

/// `config` with its literal secrets (what `config show` masks) among the
/// values masked in what its server prints, as a loaded config has them.
fn masking_literals(mut config: McpServerConfig) -> McpServerConfig {
    let mut secrets = std::mem::take(&mut config.secrets);
    extpool_config::secrets::keep_literal_secrets(&config, &mut secrets);
    config.secrets = secrets;
    config
}
