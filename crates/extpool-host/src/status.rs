//! What the host reports about itself: each server's start-up state (also
//! sent as [`ServerEvent`]s while starting), and [`HostStatus`], read from
//! caches only — asking for it never contacts a server.

use std::time::Duration;

use extpool_catalog::CatalogStatus;
use serde::Serialize;

/// The id of the configuration as a discovery source: what found every
/// configured server.
pub const CONFIG_SOURCE: &str = "config";

/// The state of one configured server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerState {
    /// Configured but not selected for this host (not started).
    Configured,
    /// `enabled: false`.
    Disabled,
    /// Each caller's own (`oauth.per_user` on a gateway): started for each
    /// caller's sessions with that caller's grant, never for everyone.
    PerCaller,
    /// Spawning or dialing, and initializing.
    Connecting,
    /// Still connecting, and what the server last said on stderr (`cargo`
    /// compiling it, `npx` downloading it): a long start says what it is doing.
    Starting {
        /// The server's latest stderr line (masked).
        said: String,
    },
    /// Connected, and its tools listed.
    Ready {
        /// Time from the start of this server's start-up, in milliseconds.
        elapsed_ms: u64,
        /// How many tools it offers.
        tools: usize,
    },
    /// Lazy: its declared tools are listed; the first call connects.
    Lazy {
        /// Declared tools.
        tools: usize,
    },
    /// Left out: it would reach the gateway itself (its own address, or a
    /// stdio `extpool serve`).
    Skipped {
        /// Why, in words.
        reason: String,
    },
    /// Did not start; its tools are unavailable, everything else works.
    Failed {
        /// Why, in words for people (the cause once, outermost first).
        reason: String,
    },
}

impl ServerState {
    /// The state as one word (`ready`, `failed`, …).
    pub fn word(&self) -> &'static str {
        match self {
            Self::Configured => "configured",
            Self::Disabled => "disabled",
            Self::PerCaller => "per caller",
            Self::Connecting | Self::Starting { .. } => "connecting",
            Self::Ready { .. } => "ready",
            Self::Lazy { .. } => "lazy",
            Self::Skipped { .. } => "skipped",
            Self::Failed { .. } => "failed",
        }
    }

    /// True when the server's tools are in the catalog (ready or lazy).
    pub fn is_usable(&self) -> bool {
        matches!(self, Self::Ready { .. } | Self::Lazy { .. })
    }

    pub(crate) fn ready(elapsed: Duration, tools: usize) -> Self {
        Self::Ready {
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            tools,
        }
    }
}

/// One step of one server's start-up, for a live display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerEvent {
    /// The server.
    pub server: String,
    /// Its new state.
    pub state: ServerState,
}

/// A configured server as the host sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// Its name.
    pub name: String,
    /// Where it is configured (`file:line`), empty for a configuration value.
    pub origin: String,
    /// How it is reached, without secrets (`stdio: cmd args…`, `http: URL`).
    pub transport: String,
    /// The plugin that provides it (its id, as its host names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The permission profile it runs under (`null`: unconfined).
    pub sandbox: Option<extpool_sandbox::SandboxProfile>,
    /// Its state.
    #[serde(flatten)]
    pub state: ServerState,
    /// What the server said it is at its latest connection (`serverInfo`:
    /// name, version, title, icons, website), as it said it; absent before
    /// it connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implementation: Option<rmcp::model::Implementation>,
}

/// The host's cached state.
#[derive(Debug, Clone, Serialize)]
pub struct HostStatus {
    /// Every configured server.
    pub servers: Vec<ServerInfo>,
    /// The pool catalog: revision, reconciliation state, every source.
    pub catalog: CatalogStatus,
    /// Local skills loaded.
    pub skills: usize,
    /// Problems found while assembling (skills skipped, embedded servers
    /// that could not be set up, composition deeper than allowed), one line
    /// each, located where possible.
    pub diagnostics: Vec<String>,
}

impl HostStatus {
    /// Names of the servers that failed to start.
    pub fn failed_servers(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter(|s| matches!(s.state, ServerState::Failed { .. }))
            .map(|s| s.name.clone())
            .collect()
    }

    /// True once a reconciliation cycle has succeeded (the first revision
    /// is published, or there was nothing to publish).
    pub fn is_ready(&self) -> bool {
        self.catalog.revision > 0 || self.catalog.reconciliations > self.catalog.failures
    }
}
