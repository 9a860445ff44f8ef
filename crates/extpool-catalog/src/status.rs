//! What `ListMcpSources` / `extpool list sources` shows: the cached state of
//! every source and of the reconciliation loop. Reading it never probes an
//! upstream server.

use std::sync::Arc;
use std::time::SystemTime;

use extpool_core::ExtensionError;
use serde::Serialize;

/// Why a source could not be listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A listing call failed.
    #[error("{operation} failed: {error}")]
    Listing {
        /// "list_tools", "list_resources" or "list_commands".
        operation: &'static str,
        /// The source's error (shown in the message, so not a `source()`).
        error: ExtensionError,
    },
    /// The source did not answer in time.
    #[error("listing did not finish within {timeout_ms} ms")]
    Timeout {
        /// The limit.
        timeout_ms: u64,
    },
}

impl SourceError {
    /// True when the source timed out (here or in its own layer).
    pub fn is_timeout(&self) -> bool {
        match self {
            Self::Timeout { .. } => true,
            Self::Listing { error, .. } => error.is_timeout(),
        }
    }

    /// The source's own error, when it returned one.
    pub fn extension_error(&self) -> Option<&ExtensionError> {
        match self {
            Self::Listing { error, .. } => Some(error),
            Self::Timeout { .. } => None,
        }
    }
}

/// The cached state of one source.
#[derive(Debug, Clone, Serialize)]
pub struct SourceStatus {
    /// Capability id.
    pub id: String,
    /// Namespace of its names.
    pub namespace: String,
    /// The latest published revision built from a successful listing of
    /// this source (`None` when it has never been listed successfully).
    pub revision: Option<u64>,
    /// True when the last attempt failed: the published revision holds
    /// this source's last good listing (or nothing, if there was none).
    pub stale: bool,
    /// The error of the last failed attempt, kept until a success.
    #[serde(serialize_with = "serialize_error")]
    pub last_error: Option<Arc<SourceError>>,
    /// When the source was last listed (successfully or not).
    #[serde(serialize_with = "extpool_core::time::serialize_option")]
    pub last_attempt: Option<SystemTime>,
    /// When the source was last listed successfully.
    #[serde(serialize_with = "extpool_core::time::serialize_option")]
    pub last_success: Option<SystemTime>,
    /// Tools in its last good listing.
    pub tools: usize,
    /// Resources in its last good listing.
    pub resources: usize,
    /// Commands (prompts) in its last good listing.
    pub commands: usize,
    /// True for a source reached only as another capability's child (a
    /// skill-embedded server): when it fails, only its own tools go.
    pub optional: bool,
    /// False when an optional source's last listing failed and its tools
    /// are left out of the published revision.
    pub available: bool,
}

fn serialize_error<S: serde::Serializer>(
    e: &Option<Arc<SourceError>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match e {
        Some(e) => s.collect_str(e),
        None => s.serialize_none(),
    }
}

/// What the reconciliation loop is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
#[non_exhaustive]
pub enum ReconcileState {
    /// Not started yet.
    NotStarted,
    /// Waiting for a change.
    Idle,
    /// A change arrived; gathering the rest of the burst.
    Pending,
    /// Listing sources and building a candidate.
    Reconciling,
    /// The last attempt failed; the next one is scheduled.
    RetryScheduled {
        /// Milliseconds until the retry (at the time of the query).
        in_ms: u64,
    },
    /// The loop has stopped.
    Stopped,
}

/// A snapshot of the catalog's state.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogStatus {
    /// The published revision number.
    pub revision: u64,
    /// What the loop is doing.
    pub state: ReconcileState,
    /// Reconciliation cycles run (successful or not).
    pub reconciliations: u64,
    /// Cycles that failed and kept the previous revision.
    pub failures: u64,
    /// Change notifications received from current sources.
    pub events: u64,
    /// Notifications ignored because they came from a retired runtime.
    pub ignored_events: u64,
    /// When the last cycle finished.
    #[serde(serialize_with = "extpool_core::time::serialize_option")]
    pub last_reconcile: Option<SystemTime>,
    /// Every known source, in visibility order.
    pub sources: Vec<SourceStatus>,
}

impl CatalogStatus {
    /// The status of one source.
    pub fn source(&self, id: &str) -> Option<&SourceStatus> {
        self.sources.iter().find(|s| s.id == id)
    }

    /// True when any source is stale.
    pub fn any_stale(&self) -> bool {
        self.sources.iter().any(|s| s.stale)
    }
}
