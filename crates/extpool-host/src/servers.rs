//! Starting the configured servers: each is resolved (`${VAR}`, relative
//! paths), then all start in parallel through `extpool_mcp::start_servers`
//! with one event per step. Partial failure is normal: a server that cannot
//! be resolved or started is recorded with its reason and left out; the
//! others are unaffected.

use std::sync::Arc;

use extpool_catalog::{BuiltinServers, BuiltinTool};
use extpool_config::{Loaded, McpServerConfig, process_env};
use extpool_mcp::{McpServerCap, ServerStatus, SessionConnectionPool, StatusEvent, start_servers};
use serde_json::{Map, Value};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::options::ServerSelection;
use crate::own::OwnEndpoints;
use crate::status::{ServerEvent, ServerInfo, ServerState};

/// One server (configured or discovered) and what became of it.
#[derive(Clone)]
pub(crate) struct ServerEntry {
    pub info: ServerInfo,
    /// The capability, when the server is ready or lazy.
    pub cap: Option<Arc<McpServerCap>>,
    /// The discovery source that names it (`config`, `toolhive`).
    pub source: String,
    /// Its configuration as written: a change of it replaces the server.
    pub written: McpServerConfig,
}

impl ServerEntry {
    /// What the server said it is at its latest connection, read from its
    /// connection now (it may have reconnected to a new version).
    pub(crate) fn implementation(&self) -> Option<rmcp::model::Implementation> {
        self.cap.as_ref()?.implementation()
    }

    /// Its row as a status shows it: with what it said it is.
    pub(crate) fn shown(&self) -> ServerInfo {
        ServerInfo {
            implementation: self.implementation(),
            ..self.info.clone()
        }
    }
}

/// Where a server is defined, for listings: `file:line`, or for a
/// plugin's server the plugin and its folder.
pub fn origin_of(source: &extpool_config::ServerSource) -> String {
    match &source.plugin {
        Some(plugin) => format!("plugin {plugin} ({})", source.file),
        None => format!("{}:{}", source.file, source.pos.line),
    }
}

/// How a server is reached, for listings: no env, no headers, no secrets.
pub fn transport(config: &McpServerConfig) -> String {
    match (&config.command, &config.url) {
        (Some(cmd), _) => {
            let mut s = format!("stdio: {cmd}");
            for a in config.args.iter().take(4) {
                s.push(' ');
                s.push_str(a);
            }
            if config.args.len() > 4 {
                s.push_str(" …");
            }
            s
        }
        (None, Some(url)) => format!("http: {url}"),
        (None, None) => "no transport".into(),
    }
}

/// The enabled server whose tools (or prompts) are named `name`: the one
/// whose namespace — its `prefix`, else its name — begins `name` as
/// `mcp__<namespace>__`. Namespaces never hold `__`, so at most one matches.
/// A call needs only that server started.
pub fn server_of(loaded: &Loaded, name: &str) -> Option<String> {
    loaded
        .enabled_servers()
        .find(|(server, config)| {
            let namespace = config.prefix.as_deref().unwrap_or(server.as_str());
            extpool_catalog::names::in_namespace(name, namespace)
        })
        .map(|(server, _)| server.clone())
}

/// The servers calling `name` with `arguments` needs started: the one whose
/// namespace the name carries (`mcp__<server>__…`), or the one a built-in's
/// `server` argument names (`CallMcpWithQuery`, `ReadMcpResource`,
/// `ListMcpResources`); none for `mcp__<x>__…` when no server has that
/// namespace (none can have the tool); every one otherwise. When a
/// built-in should have named its server and did not, or named one that is
/// not configured, every server is started and the note says so.
pub fn call_selection(
    loaded: &Loaded,
    name: &str,
    arguments: &Map<String, Value>,
) -> (ServerSelection, Option<String>) {
    let only = |server: String| ServerSelection::Only([server].into());
    if let Some(builtin) = BuiltinTool::named(name) {
        let every = |why: String| {
            let note = format!("{name} {why}; starting every server");
            (ServerSelection::All, Some(note))
        };
        return match builtin.servers(arguments) {
            BuiltinServers::Every => (ServerSelection::All, None),
            BuiltinServers::Unnamed => every("names no server (server=…)".into()),
            BuiltinServers::One(server) if loaded.enabled_servers().any(|(n, _)| n == server) => {
                (only(server.to_owned()), None)
            }
            BuiltinServers::One(server) => every(format!(
                "names {server:?}, which is not a configured server"
            )),
        };
    }
    match server_of(loaded, name) {
        Some(server) => (only(server), None),
        // `mcp__x__…` with no server `x`: no server can have it, so none is
        // started (and none waited for) to say so.
        None if extpool_catalog::names::is_namespaced(name) => {
            (ServerSelection::Only(Default::default()), None)
        }
        None => (ServerSelection::All, None),
    }
}

fn send(events: &Option<UnboundedSender<ServerEvent>>, server: &str, state: &ServerState) {
    if let Some(tx) = events {
        let _ = tx.send(ServerEvent {
            server: server.to_owned(),
            state: state.clone(),
        });
    }
}

pub(crate) fn state_of(status: &ServerStatus) -> ServerState {
    match status {
        ServerStatus::Connecting => ServerState::Connecting,
        ServerStatus::Starting { said } => ServerState::Starting { said: said.clone() },
        ServerStatus::Ready { elapsed, tools } => ServerState::ready(*elapsed, *tools),
        ServerStatus::Lazy { tools } => ServerState::Lazy { tools: *tools },
        ServerStatus::Disabled => ServerState::Disabled,
        ServerStatus::Failed { error, .. } => ServerState::Failed {
            reason: error.reason(),
        },
        _ => ServerState::Failed {
            reason: "unknown start-up state".into(),
        },
    }
}

/// Whether `config`'s OAuth grant is each caller's (`oauth.per_user`).
pub fn is_per_user(config: &McpServerConfig) -> bool {
    config.oauth.as_ref().is_some_and(|o| o.per_user)
}

/// Whether each caller of a gateway has its own credential for `config`'s
/// server (a per-user grant, a token exchanged or passed through), so that
/// a gateway starts it for each caller, never for everyone.
pub fn is_each_callers(config: &McpServerConfig) -> bool {
    config.oauth.as_ref().is_some_and(|o| o.is_each_callers())
}

/// What a gateway's host leaves out of the servers it starts for
/// everyone, at start and at every reading of its configs.
#[derive(Debug, Clone, Default)]
pub struct Exclusions {
    /// Servers whose grant is each caller's are started for each caller
    /// ([`crate::HostOptions::per_caller_servers`]).
    pub per_caller: bool,
    /// The gateway's own endpoints: an entry that reaches it is never
    /// started ([`crate::own`]).
    pub own: Option<OwnEndpoints>,
}

/// Why a configured server is left out of the shared set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOut {
    /// Its grant is each caller's.
    PerCaller,
    /// It is the gateway itself (why, in words).
    Own(String),
}

impl Exclusions {
    /// Why `config` is left out, if it is.
    pub fn left_out(&self, config: &McpServerConfig) -> Option<LeftOut> {
        if let Some(why) = self.own.as_ref().and_then(|own| own.recognise(config)) {
            return Some(LeftOut::Own(why));
        }
        (self.per_caller && is_each_callers(config)).then_some(LeftOut::PerCaller)
    }
}

/// Resolves and starts the selected servers of `loaded` (those
/// `exclusions` leaves out are not started); returns every configured
/// server in configuration order.
pub(crate) async fn start(
    loaded: &Loaded,
    selection: &ServerSelection,
    exclusions: &Exclusions,
    pool: &SessionConnectionPool,
    events: &Option<UnboundedSender<ServerEvent>>,
) -> Vec<ServerEntry> {
    let mut entries = Vec::with_capacity(loaded.config.mcp_servers.len());
    let mut to_start = Vec::new();
    // Recognising the gateway itself may look a host name up: off the
    // runtime's threads.
    let left_out: Vec<Option<LeftOut>> = {
        let exclusions = exclusions.clone();
        let configs: Vec<McpServerConfig> = loaded.config.mcp_servers.values().cloned().collect();
        tokio::task::spawn_blocking(move || {
            configs.iter().map(|c| exclusions.left_out(c)).collect()
        })
        .await
        .unwrap_or_default()
    };
    for (i, (name, config)) in loaded.config.mcp_servers.iter().enumerate() {
        let source = loaded.server_sources.get(name);
        let origin = source.map(origin_of).unwrap_or_default();
        // (Asked here when the blocking task could not say.)
        let left_out = match left_out.get(i) {
            Some(left) => left.clone(),
            None => exclusions.left_out(config),
        };
        let state = if !config.enabled {
            ServerState::Disabled
        } else if let Some(LeftOut::Own(reason)) = left_out {
            // Said by its start-up event.
            ServerState::Skipped { reason }
        } else if left_out == Some(LeftOut::PerCaller) {
            ServerState::PerCaller
        } else if !selection.includes(name) {
            ServerState::Configured
        } else {
            match loaded.resolve_server(name, &process_env) {
                Some(Ok(resolved)) => {
                    to_start.push((name.clone(), resolved));
                    ServerState::Connecting
                }
                Some(Err(e)) => ServerState::Failed {
                    reason: e.to_string(),
                },
                None => ServerState::Failed {
                    reason: "not configured".into(),
                },
            }
        };
        if matches!(
            state,
            ServerState::Failed { .. } | ServerState::Skipped { .. }
        ) {
            send(events, name, &state);
        }
        entries.push(ServerEntry {
            info: ServerInfo {
                name: name.clone(),
                origin,
                transport: transport(config),
                plugin: source.and_then(|s| s.plugin.clone()),
                sandbox: config.sandbox.clone(),
                state,
                implementation: None,
            },
            cap: None,
            source: crate::status::CONFIG_SOURCE.to_owned(),
            written: config.clone(),
        });
    }
    let (tx, mut rx) = unbounded_channel::<StatusEvent>();
    let forward = {
        let events = events.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                send(&events, &event.server, &state_of(&event.status));
            }
        })
    };
    let started = start_servers(pool, to_start, Some(tx)).await;
    let _ = forward.await;
    for outcome in started {
        if let Some(entry) = entries.iter_mut().find(|e| e.info.name == outcome.server) {
            entry.info.state = state_of(&outcome.status);
            entry.cap = outcome.cap;
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_of_a_name_is_found_by_its_namespace() {
        let root = extpool_config::tree::parse_yaml(
            "mcp_servers:\n  git:\n    command: a\n  github:\n    command: b\n    prefix: gh\n  off:\n    command: c\n    enabled: false\n",
        )
        .unwrap();
        let mut loaded = Loaded::default();
        loaded.config = extpool_config::de::from_node(&root).unwrap();
        assert_eq!(server_of(&loaded, "mcp__git__log").as_deref(), Some("git"));
        assert_eq!(
            server_of(&loaded, "mcp__gh__issue").as_deref(),
            Some("github")
        );
        assert_eq!(server_of(&loaded, "mcp__github__issue"), None);
        assert_eq!(server_of(&loaded, "mcp__off__x"), None);
        assert_eq!(server_of(&loaded, "mcp__git__"), None);
        assert_eq!(server_of(&loaded, "CallMcpWithQuery"), None);
    }

    #[test]
    fn transport_shows_no_secrets() {
        let mut c = McpServerConfig::stdio("npx", ["-y", "a", "b", "c", "d"]);
        c.env.insert("TOKEN".into(), "secret".into());
        assert_eq!(transport(&c), "stdio: npx -y a b c …");
        let mut h = McpServerConfig::http("https://x.example/mcp");
        h.headers
            .insert("Authorization".into(), "Bearer secret".into());
        assert_eq!(transport(&h), "http: https://x.example/mcp");
    }
}
