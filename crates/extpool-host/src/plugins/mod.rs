//! Plugins and command files in the host: what extpool, Claude Code, Codex
//! and Gemini CLI installed and enabled, and every host's command folders,
//! found from the host's [`Places`] with no configuration
//! (`plugins.discover` and `commands.default_roots` turn them off;
//! `HOME`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME` point them elsewhere).
//!
//! What a plugin provides joins the same registry as everything else:
//!
//! - its MCP servers become servers of the loaded configuration, after
//!   every configuration file (a name a file defines wins), named
//!   `plugin_<plugin>_<server>` — only an enabled plugin's, and only those
//!   extpool's client can start ([`add_servers`], the one place a plugin
//!   server's configuration is made); its stdio servers run confined by
//!   its default permission profile unless the user says otherwise
//!   ([`confine`]);
//! - its skills are served by one capability ([`PLUGIN_SKILLS_ID`]) as
//!   `plugin:skill`, read as `skill://<plugin>/<skill>/…`;
//! - its commands, with every host's command files, by another
//!   ([`COMMANDS_ID`]).
//!
//! Precedence, the first definition of a name winning and every later
//! one reported: local skills (extpool-skills' roots), then the plugins'
//! skills; skills' commands before command files (as Claude Code: "the
//! skill wins"); command files in [`extpool_plugins::discover`]'s order;
//! configured servers before plugin servers; among plugins, extpool's own,
//! then Claude Code's, Codex's, Gemini CLI's.
//!
//! When the configuration is reloaded while serving, plugins are found
//! again with it, so installing, enabling, disabling or removing a
//! plugin in any host changes a running gateway.

pub mod confine;
mod info;

use std::path::PathBuf;
use std::sync::Arc;

use extpool_config::{ConfigError, ExtpoolConfig, LoadRequest, Loaded, McpServerConfig, Places};
use extpool_plugins::{
    DiscoverRequest, Discovery, InstalledPlugin, LocalCommandSource, PluginServer, PluginSkills,
};
use parking_lot::Mutex;
use serde::Serialize;

pub use confine::Confinement;
pub use extpool_plugins::store::{MarketplaceRecord, Prepared, Record, Source, parse_source};
pub use extpool_plugins::{
    CommandSpec, Diagnostic, HookSpec, Marketplace, Outcome, Plugin, ReadOptions, Report, Store,
    StoreError, validate,
};
pub(crate) use info::source_rows;
pub use info::{AgentInfo, PluginInfo, agents, plugins, problems};

/// The id of the capability serving the plugins' skills.
pub const PLUGIN_SKILLS_ID: &str = "plugin-skills";
/// The id of the capability serving command files.
pub const COMMANDS_ID: &str = "command-files";

/// What plugin discovery found, and what became of the plugins' servers.
#[derive(Debug, Clone)]
pub struct Found {
    /// Everything found.
    pub discovery: Arc<Discovery>,
    /// What was looked at (for the watcher).
    request: Option<DiscoverRequest>,
    /// Plugin servers that were not added, each with its plugin and why.
    pub skipped_servers: Vec<SkippedServer>,
    /// How each plugin's stdio servers are confined, by its index in
    /// `discovery.plugins` (`None`: unconfined, or not loaded).
    pub confinements: Vec<Option<Confinement>>,
    /// The configuration's `plugins.sandbox` entries that name no plugin.
    pub unmatched: Vec<String>,
}

/// A server of an enabled plugin that is not served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedServer {
    /// Its plugin's id.
    pub plugin: String,
    /// The server's name as the plugin declares it.
    pub server: String,
    /// Why it is not served.
    pub reason: String,
}

impl Found {
    /// Nothing found (discovery off).
    pub fn none() -> Self {
        Self {
            discovery: Arc::new(Discovery {
                plugins: Vec::new(),
                commands: Vec::new(),
                skills: Default::default(),
                plugin_skills: Vec::new(),
                diagnostics: Vec::new(),
            }),
            request: None,
            skipped_servers: Vec::new(),
            confinements: Vec::new(),
            unmatched: Vec::new(),
        }
    }

    /// The files and folders whose change can change what is found.
    pub fn watched(&self) -> Vec<PathBuf> {
        self.request
            .as_ref()
            .map(DiscoverRequest::watched)
            .unwrap_or_default()
    }
}

/// extpool's plugin store for `places` (its data directory's `plugins`).
pub fn store(places: &Places) -> Option<Store> {
    places.data_dir().map(|dir| Store::new(&dir))
}

/// How plugins are read for `places`: default bounds, plugins' data
/// folders (`PLUGIN_DATA`) under the data directory's `plugin-data`.
pub fn read_options(places: &Places) -> ReadOptions {
    let root = places
        .data_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("extpool"))
        .join("plugin-data");
    let mut opts = ReadOptions::new(root);
    opts.project = Some(places.cwd.clone());
    opts
}

/// What to discover with `config`'s `plugins:` and `commands:` settings
/// from `places`; `None` when nothing is to be found (no home folder).
fn request(config: &ExtpoolConfig, places: &Places) -> Option<DiscoverRequest> {
    let store = store(places);
    let home = places.home.clone()?;
    let data_root = read_options(places).data_root;
    let mut req = DiscoverRequest::new(home, Some(places.cwd.clone()), data_root);
    if let Some(codex) = &places.codex_home {
        req.dirs.codex = codex.clone();
    }
    if let Some(claude) = &places.claude_config_dir {
        req.dirs.claude = claude.clone();
    }
    req.hosts = config.plugins.discover;
    req.command_folders = config.commands.default_roots;
    // The skill manager walks the skill folders.
    req.skill_folders = false;
    req.store = store;
    Some(req)
}

/// Finds the plugins and command files from `places` with `config`'s
/// `plugins:` and `commands:` settings (blocking: reads files).
pub fn discover(config: &ExtpoolConfig, places: &Places) -> Found {
    let Some(req) = request(config, places) else {
        return Found::none();
    };
    let discovery = extpool_plugins::discover(&req);
    Found {
        discovery: Arc::new(discovery),
        request: Some(req),
        skipped_servers: Vec::new(),
        confinements: Vec::new(),
        unmatched: Vec::new(),
    }
}

/// The configuration extpool starts plugin server `server` of `plugin`
/// with: the one place it is made. Its data folder is created first. A
/// stdio server runs confined by `confinement` (`None`: unconfined). A
/// Claude Code plugin's stdio server gets `CLAUDE_PLUGIN_ROOT` and
/// `CLAUDE_PLUGIN_DATA` in its environment, as Claude Code gives them.
pub fn server_config(
    plugin: &Plugin,
    server: &PluginServer,
    confinement: Option<&Confinement>,
) -> McpServerConfig {
    if let Err(e) = std::fs::create_dir_all(&plugin.data_dir) {
        tracing::warn!(plugin = %plugin.name, dir = %plugin.data_dir.display(), "cannot create the plugin's data folder: {e}");
    }
    let mut config = server.config.clone();
    if config.command.is_some() {
        config.sandbox = confinement.map(Confinement::for_config);
    }
    if plugin.format == extpool_plugins::Format::ClaudeCode && config.command.is_some() {
        let escape = extpool_config::expand::escape;
        for (name, value) in [
            ("CLAUDE_PLUGIN_ROOT", &plugin.root),
            ("CLAUDE_PLUGIN_DATA", &plugin.data_dir),
        ] {
            config
                .env
                .entry(name.to_owned())
                .or_insert_with(|| escape(&value.display().to_string()));
        }
    }
    config
}

/// The origin (program) a plugin's servers are resolved as.
fn origin(p: &InstalledPlugin) -> extpool_config::locate::Origin {
    use extpool_config::locate::Origin;
    match p.host {
        extpool_plugins::Host::ClaudeCode => Origin::ClaudeCode,
        extpool_plugins::Host::Codex => Origin::Codex,
        _ => Origin::Extpool,
    }
}

/// Adds the servers of `found`'s enabled plugins to `loaded`, after every
/// configuration file; a server that cannot be added (its name is taken,
/// its transport is not one extpool's client speaks, its URL is refused)
/// is recorded in `found.skipped_servers`.
pub fn add_servers(found: &mut Found, loaded: &mut Loaded, places: &Places) {
    let mut skipped = Vec::new();
    let confinements: Vec<Option<Confinement>> = found
        .discovery
        .plugins
        .iter()
        .map(|p| {
            let plugin = p.plugin.as_ref()?;
            confine::confinement(&loaded.config, plugin, &p.id, places)
        })
        .collect();
    let names: Vec<(&str, &str)> = found
        .discovery
        .plugins
        .iter()
        .map(|p| {
            let name = p.plugin.as_ref().map_or(p.id.as_str(), |x| x.name.as_str());
            (name, p.id.as_str())
        })
        .collect();
    let unmatched = confine::unmatched(&loaded.config, &names);
    for (p, confinement) in found.discovery.plugins.iter().zip(&confinements) {
        if !p.enabled {
            continue;
        }
        let Some(plugin) = &p.plugin else { continue };
        let file = extpool_config::diagnostics::display_path(
            &plugin.root,
            Some(&places.cwd),
            places.home.as_deref(),
        );
        for server in &plugin.servers {
            let skip = |reason: String| SkippedServer {
                plugin: p.id.clone(),
                server: server.name.clone(),
                reason,
            };
            if !server.startable() {
                skipped.push(skip(
                    "it uses the HTTP+SSE transport, which extpool's client does not speak".into(),
                ));
                continue;
            }
            let config = server_config(plugin, server, confinement.as_ref());
            if let Err(reason) = loaded.add_plugin_server(
                &server.server_name,
                config,
                &plugin.name,
                &file,
                &plugin.root,
                origin(p),
            ) {
                skipped.push(skip(reason));
            }
        }
    }
    for s in &skipped {
        tracing::warn!(plugin = %s.plugin, server = %s.server, "plugin server not served: {}", s.reason);
    }
    for line in &unmatched {
        tracing::warn!("{line}");
    }
    found.skipped_servers = skipped;
    found.confinements = confinements;
    found.unmatched = unmatched;
}

/// The configuration of `request` with the plugins' servers added, and
/// what was found: what a front end loads before starting a host (and
/// hands to it in [`crate::HostOptions::plugins`]).
pub fn load(request: &LoadRequest) -> Result<(Loaded, Found), ConfigError> {
    let mut loaded = extpool_config::load(request)?;
    let mut found = discover(&loaded.config, &request.places);
    add_servers(&mut found, &mut loaded, &request.places);
    Ok((loaded, found))
}

/// The plugins and command files a running host serves, replaced whole
/// when they are found again.
#[derive(Debug)]
pub(crate) struct Live {
    found: Mutex<Found>,
    pub skills: Arc<PluginSkills>,
    pub commands: Arc<LocalCommandSource>,
}

impl Live {
    /// Serves what `found` holds.
    pub fn new(found: Found) -> Self {
        Self {
            skills: Arc::new(PluginSkills::new(
                PLUGIN_SKILLS_ID,
                found.discovery.plugin_skills.clone(),
            )),
            commands: Arc::new(LocalCommandSource::new(
                COMMANDS_ID,
                found.discovery.commands.clone(),
            )),
            found: Mutex::new(found),
        }
    }

    /// What was found last.
    pub fn found(&self) -> Found {
        self.found.lock().clone()
    }

    /// Serves what `found` holds from now on (the capabilities tell their
    /// subscribers what changed).
    pub fn publish(&self, found: Found) {
        self.skills.replace(found.discovery.plugin_skills.clone());
        self.commands.replace(found.discovery.commands.clone());
        *self.found.lock() = found;
    }
}
