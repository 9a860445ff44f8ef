//! [`HostOptions`]: where the configuration comes from, which servers to
//! start, and where to report their start-up.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use extpool_config::{ConfigError, Diagnostic, ExtpoolConfig, Loaded, Places, Severity};
use extpool_mcp::McpServerConfig;
use tokio::sync::mpsc::UnboundedSender;

use crate::status::ServerEvent;

/// Where the host's configuration comes from.
#[derive(Debug, Clone)]
pub enum ConfigSource {
    /// These files (extpool.yaml, `.mcp.json`, Codex, VS Code … told from
    /// the name); none means discovering configs from [`Places`] exactly as
    /// the `extpool` command does.
    Files(Vec<PathBuf>),
    /// A configuration already loaded.
    Loaded(Box<Loaded>),
    /// A configuration value, checked like an `extpool.yaml`; relative
    /// paths resolve against `base_dir`.
    Value {
        /// The configuration.
        config: Box<ExtpoolConfig>,
        /// The directory relative paths are resolved against.
        base_dir: PathBuf,
    },
}

/// Which configured servers the host starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ServerSelection {
    /// Every enabled server (serving, listing tools).
    #[default]
    All,
    /// None: skills and configuration only (`list skills`, `list servers`).
    None,
    /// Only these (a call needs only its own server).
    Only(BTreeSet<String>),
}

impl ServerSelection {
    /// Whether server `name` is selected.
    pub fn includes(&self, name: &str) -> bool {
        match self {
            Self::All => true,
            Self::None => false,
            Self::Only(names) => names.contains(name),
        }
    }
}

/// How to start a [`crate::Host`]: make one with [`HostOptions::files`],
/// [`HostOptions::loaded`] or [`HostOptions::value`], and change the rest
/// with struct update syntax:
///
/// ```
/// # use extpool_host::{HostOptions, ServerSelection};
/// let options = HostOptions {
///     servers: ServerSelection::None,
///     ..HostOptions::files(["extpool.yaml"])
/// };
/// ```
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The configuration.
    pub config: ConfigSource,
    /// The working directory and home that configs, project skills and
    /// relative paths are found from.
    pub places: Places,
    /// Which servers to start.
    pub servers: ServerSelection,
    /// Whether to watch skill roots for changes; `None` follows
    /// `skills.watch` in the configuration.
    pub watch_skills: Option<bool>,
    /// Receives one event per step of each server's start-up.
    pub events: Option<UnboundedSender<ServerEvent>>,
    /// The registry's pool id (the outermost scope).
    pub pool_id: String,
    /// Relay what servers ask during a call (sampling, elicitation) and
    /// their log messages to the client behind the call (its
    /// [`CallContext`](extpool_core::CallContext)); servers are told the
    /// host can sample and elicit. For gateways.
    pub relay: bool,
    /// What the host finds while it runs — edits of its configuration
    /// files, ToolHive's workloads — on the catalog's reconciliation loop.
    /// Nothing by default; used only when every server is selected.
    pub discovery: DiscoveryOptions,
    /// Servers whose OAuth grant is each caller's (`oauth.per_user`) are
    /// not started for everyone but for each caller's sessions
    /// ([`crate::Host::caller_servers`]). For gateways; off by default (the
    /// command line is one caller, with its own grant).
    pub per_caller_servers: bool,
    /// Plugins and command files ([`crate::plugins`]): found from
    /// [`HostOptions::places`] at start by default.
    pub plugins: PluginOptions,
    /// The endpoints of the gateway this host serves: a configured server
    /// that would reach it (its own address, a stdio `extpool serve`) is
    /// left out with a line saying why ([`crate::own`]). None by default.
    pub own: Option<crate::own::OwnEndpoints>,
}

/// Where a host's plugins and command files come from.
#[derive(Debug, Clone, Default)]
pub enum PluginOptions {
    /// Found from the host's places at start, with the configuration's
    /// `plugins:` and `commands:` settings; their servers are added to the
    /// configuration.
    #[default]
    Discover,
    /// Found already by the front end with [`crate::plugins::load`],
    /// whose configuration has their servers.
    Found(Box<crate::plugins::Found>),
    /// None.
    Off,
}

/// What a host discovers while it runs (see [`crate::discovery`]).
#[derive(Debug, Clone, Default)]
pub struct DiscoveryOptions {
    /// Reload the servers of the configuration when its files change.
    pub reload: Option<ConfigReload>,
    /// Poll ToolHive's workloads API for running MCP servers.
    pub toolhive: Option<ToolHiveOptions>,
}

/// How the configuration is read again when its files change.
#[derive(Debug, Clone, Default)]
pub struct ConfigReload {
    /// The files named with `--config`; none: configs discovered from the
    /// host's [`Places`], as at start.
    pub files: Vec<PathBuf>,
    /// What the command line changed, applied again over every reload.
    pub overrides: ConfigOverrides,
}

/// ToolHive's API (`thv serve`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolHiveOptions {
    /// Its base URL (`http://127.0.0.1:8080`).
    pub url: String,
    /// Only the workloads of this group.
    pub group: Option<String>,
}

/// What command-line flags change in a loaded configuration
/// (`--mcp-server`, `--mcp-server-insecure-http`, `--mcp-resource-tools`,
/// `--mcp-prompts`): one rule, applied at start and again over every
/// reload, so a flag keeps winning after an edit of the files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigOverrides {
    /// Servers given as flags (`NAME=URL`), winning over a configured
    /// server of the same name.
    pub servers: Vec<(String, McpServerConfig)>,
    /// Servers allowed plain `http://` to a non-loopback host.
    pub insecure_http: Vec<String>,
    /// `extensions.resource_tools`, when set.
    pub resource_tools: Option<bool>,
    /// `extensions.prompt_commands`, when set.
    pub prompts: Option<bool>,
}

impl ConfigOverrides {
    /// Applies the flags to `loaded`; relative paths resolve against `cwd`.
    /// A flag naming a server that does not exist is an error naming it.
    pub fn apply(&self, loaded: &mut Loaded, cwd: &Path) -> Result<(), ConfigError> {
        for (name, config) in &self.servers {
            loaded.add_flag_server(name, config.clone(), &format!("--mcp-server {name}"), cwd)?;
        }
        for name in &self.insecure_http {
            let Some(server) = loaded.config.mcp_servers.get_mut(name) else {
                return Err(ConfigError::Invalid {
                    diagnostics: vec![Diagnostic::new(
                        Severity::Error,
                        format!("--mcp-server-insecure-http {name}"),
                        None,
                        "",
                        format!("no server named {name:?} is configured"),
                    )],
                });
            };
            server.insecure_http = true;
        }
        if let Some(on) = self.resource_tools {
            loaded.config.extensions.resource_tools = on;
        }
        if let Some(on) = self.prompts {
            loaded.config.extensions.prompt_commands = on;
        }
        Ok(())
    }
}

impl HostOptions {
    /// Options for configs discovered from `places`, or read from `files`
    /// when there are any (the `--config` flag).
    pub fn files(files: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        Self::with_source(ConfigSource::Files(
            files.into_iter().map(Into::into).collect(),
        ))
    }

    /// Options for an already loaded configuration.
    pub fn loaded(loaded: Loaded) -> Self {
        Self::with_source(ConfigSource::Loaded(Box::new(loaded)))
    }

    /// Options for a configuration value; relative paths resolve against `base_dir`.
    pub fn value(config: ExtpoolConfig, base_dir: impl Into<PathBuf>) -> Self {
        Self::with_source(ConfigSource::Value {
            config: Box::new(config),
            base_dir: base_dir.into(),
        })
    }

    fn with_source(config: ConfigSource) -> Self {
        Self {
            config,
            places: Places::from_env(),
            servers: ServerSelection::All,
            watch_skills: None,
            events: None,
            pool_id: "extpool".into(),
            relay: false,
            discovery: DiscoveryOptions::default(),
            per_caller_servers: false,
            plugins: PluginOptions::Discover,
            own: None,
        }
    }
}
