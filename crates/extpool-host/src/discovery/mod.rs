//! Discovery: MCP servers that join and leave while the host runs.
//!
//! A [`DiscoverySource`] says which servers it knows of now: the
//! configuration files (read again when they change, see [`files`]) and
//! ToolHive's running workloads (polled, see [`toolhive`]). They feed the
//! pool catalog's one reconciliation loop through the [`Reconciler`], the
//! host's [`Membership`](extpool_catalog::Membership) provider:
//!
//! 1. at the start of a cycle, the sources that are due are consulted, a
//!    bounded number at once, each within a timeout;
//! 2. the servers they name (the configuration first; a name taken
//!    ignoring case is left out with a note) are compared with the
//!    running ones: a new name is added, a name whose configuration (URL,
//!    command…) changed is replaced, a name no longer named is removed;
//! 3. the new and replacing servers are started — the complete candidate —
//!    and the catalog lists everything as it would be after the change; only
//!    when all of that succeeds are additions, replacements and removals
//!    published together, in one revision;
//! 4. a replaced or removed server's connection drains its calls in flight,
//!    then closes (Codex-style: build the new set, swap atomically, drain,
//!    close).
//!
//! When a source cannot be consulted, or its candidate cannot be built, the
//! last usable runtime stays, the source is marked stale with the error,
//! and it is tried again after a backoff that doubles up to a bound. A
//! discovered server keeps its name across polls (the workload's name,
//! made a valid server name), so sessions' grants keep applying.

pub mod files;
mod reconciler;
mod retire;
pub(crate) mod runtime;
pub(crate) mod setup;
mod slots;
pub mod toolhive;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use extpool_config::ConfigError;
use extpool_mcp::McpServerConfig;
use serde::Serialize;

pub(crate) use reconciler::Reconciler;

pub use crate::status::CONFIG_SOURCE;
/// The id of the ToolHive source.
pub const TOOLHIVE_SOURCE: &str = "toolhive";

/// Somewhere servers are found while the host runs.
#[async_trait]
pub trait DiscoverySource: Send + Sync + 'static {
    /// Its id (`config`, `toolhive`), also the `source` of its servers.
    fn id(&self) -> &str;

    /// Where it is consulted (a URL, the files), for status rows.
    fn endpoint(&self) -> String;

    /// True when it is consulted at every polling interval; false when
    /// only when told it changed (a file watcher) or on a refresh.
    fn polled(&self) -> bool;

    /// The servers it knows of now, or why it cannot say.
    async fn consult(&self) -> Result<Discovered, DiscoveryError>;
}

/// What one consultation found.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// The servers, in a stable order.
    pub servers: Vec<DiscoveredServer>,
    /// What was left out and why, and other remarks, one line each.
    pub notes: Vec<String>,
}

/// One server a source names.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredServer {
    /// Its server name (the rule of `extpool_core::name`).
    pub name: String,
    /// Its configuration as written (`${VAR}` unexpanded): a change of it
    /// replaces the server.
    pub written: McpServerConfig,
    /// The configuration to start (variables expanded, paths resolved),
    /// or why there is none.
    pub resolved: Result<McpServerConfig, String>,
    /// Where it comes from (`extpool.yaml:3`, `toolhive workload fetch`).
    pub origin: String,
    /// The plugin that provides it, when one does.
    pub plugin: Option<String>,
}

/// Why a source could not be consulted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// Nothing answered.
    #[error("cannot reach {endpoint}: {reason}")]
    Unreachable {
        /// The URL.
        endpoint: String,
        /// Why, in words.
        reason: String,
    },
    /// An HTTP status other than success, with the start of its body.
    #[error("{endpoint} answered HTTP {status}: {body}")]
    Status {
        /// The URL.
        endpoint: String,
        /// The status code.
        status: u16,
        /// The body, trimmed and cut.
        body: String,
    },
    /// A body that is not what the API specifies.
    #[error("{endpoint} answered something that is not a workload list: {reason}")]
    Malformed {
        /// The URL.
        endpoint: String,
        /// What is wrong.
        reason: String,
    },
    /// The consultation did not finish in time.
    #[error("{endpoint} did not answer within {timeout_ms} ms")]
    Timeout {
        /// The URL or files.
        endpoint: String,
        /// The limit.
        timeout_ms: u64,
    },
    /// The edited configuration is invalid: nothing of it was applied (its
    /// problems are shown in the message, so not a `source()`).
    #[error("the edited configuration was not applied:\n{0}")]
    Config(ConfigError),
}

/// The cached state of one discovery source, as `ListMcpSources` and
/// `GET /v1/sources` show it (never consulted to answer).
#[derive(Debug, Clone, Serialize)]
pub struct DiscoveryStatus {
    /// The source's id.
    pub source: String,
    /// Where it is consulted.
    pub endpoint: String,
    /// `ok`, `stale`, or `pending` (not consulted yet).
    pub state: &'static str,
    /// True when its last consultation, or the candidate built from it,
    /// failed: the servers of its last usable answer stay.
    pub stale: bool,
    /// When its answer was last published (milliseconds since the epoch).
    pub last_success_ms: Option<u64>,
    /// When it was last consulted.
    pub last_attempt_ms: Option<u64>,
    /// The last failure, kept after a later success (see `stale`).
    pub last_error: Option<String>,
    /// When that failure happened.
    pub last_error_ms: Option<u64>,
    /// The servers it contributes to the running set.
    pub servers: Vec<String>,
    /// What it left out and why.
    pub notes: Vec<String>,
    /// The servers of its last answer that could not be started (or
    /// listed), so its change was not published; empty once one is.
    pub failed: Vec<FailedServer>,
    /// Milliseconds until it is consulted again (polled sources, backoff).
    pub next_in_ms: Option<u64>,
}

/// A server a source names that could not be started or listed: the
/// change that would add (or replace) it was not published.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedServer {
    /// Its server name.
    pub name: String,
    /// Where it comes from (`toolhive workload fetch`, `extpool.yaml:3`).
    pub origin: String,
    /// Why, in words (the start-up or listing error).
    pub reason: String,
}

/// Timing of discovery, from the configuration's `discovery:` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How often polled sources are consulted.
    pub interval: Duration,
    /// The longest one consultation may take.
    pub timeout: Duration,
    /// First wait after a failure.
    pub backoff_initial: Duration,
    /// Longest wait after failures.
    pub backoff_max: Duration,
    /// Consultations at once.
    pub max_concurrent: usize,
}

impl From<&extpool_config::DiscoveryConfig> for Timing {
    fn from(c: &extpool_config::DiscoveryConfig) -> Self {
        Self {
            interval: Duration::from_millis(c.interval_ms.max(1)),
            timeout: Duration::from_millis(c.timeout_ms.max(1)),
            backoff_initial: Duration::from_millis(c.backoff_initial_ms.max(1)),
            backoff_max: Duration::from_millis(c.backoff_max_ms.max(c.backoff_initial_ms).max(1)),
            max_concurrent: c.max_concurrent.max(1),
        }
    }
}

/// Milliseconds since the epoch.
pub(crate) fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
