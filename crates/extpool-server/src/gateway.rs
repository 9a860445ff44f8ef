//! The [`Gateway`]: a started [`Host`] served to MCP clients, with what
//! every client session shares (the notifier, metrics, the audit log, the
//! view of clients without a session).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use extpool_host::{Host, HostError, View};
use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::auth::BearerToken;
use crate::handler::GatewayHandler;
use crate::metrics::Metrics;
use crate::names::NamesCache;
use crate::notify::Notifier;
use crate::subscriptions::Subscriptions;

/// Default largest request body, in bytes (4 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default most client sessions open at once.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// Default most tool calls one client session has in flight at once (an
/// agent runs a handful in parallel; a client past this is looping).
pub const DEFAULT_MAX_CALLS_PER_SESSION: usize = 64;
/// How long an idle session-era client session is kept (one hour: an
/// agent often idles between turns).
pub const DEFAULT_SESSION_KEEP_ALIVE: Duration = Duration::from_secs(3600);

/// How the gateway serves.
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// The token clients must present; required when listening on a
    /// non-loopback address.
    pub bearer: Option<String>,
    /// `Host` header values accepted besides loopback names and the listen
    /// address itself (DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted (`https://app.example:443`); a request with
    /// any other `Origin` is refused. Empty: only loopback origins.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Most client sessions open at once.
    pub max_sessions: usize,
    /// Most tool calls one client session (implicit or durable) has in
    /// flight at once; each 2026-07-28 request, having no session, is its
    /// own.
    pub max_calls_per_session: usize,
    /// How long an idle session-era client session is kept.
    pub session_keep_alive: Duration,
    /// Where the audit log (JSON lines) is appended, if anywhere.
    pub audit_log: Option<PathBuf>,
    /// The durable store of sessions (`/v1/sessions`); without one, only
    /// the implicit sessions of `/mcp` exist.
    pub state: Option<extpool_state::StateStore>,
    /// Whether clients may bring per-session MCP servers when they create a
    /// session (advertised as `mcp_servers_on_create`).
    pub session_servers: bool,
    /// Most per-session servers open at once, across sessions.
    pub max_session_servers: usize,
    /// Whether a per-session server may be a local command (stdio), not
    /// only a remote URL. Off by default: whoever may create a session
    /// could then run programs as the gateway's user, so only a gateway
    /// whose session API is as trusted as its configuration turns it on.
    pub session_commands: bool,
    /// Tool search: above this configuration's schema budget, a session's
    /// `tools/list` shows names and one-line descriptions in a search
    /// tool instead of every schema ([`crate::tool_search`]). Off when
    /// `None`.
    pub tool_search: Option<extpool_host::DeferralConfig>,
    /// This gateway's id among the replicas sharing its state store
    /// (default: the host name and a random suffix).
    pub replica_id: Option<extpool_state::ReplicaId>,
    /// How often this replica tells the store it is alive; a replica
    /// silent for three of these is taken for gone.
    pub replica_heartbeat: Duration,
    /// Servers whose tools and prompts are listed under their own names
    /// (without `mcp__<server>__`) where that collides with nothing (see
    /// [`crate::names`]).
    pub unprefixed: Vec<String>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self {
            bearer: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
            session_keep_alive: DEFAULT_SESSION_KEEP_ALIVE,
            audit_log: None,
            state: None,
            session_servers: true,
            max_session_servers: crate::sessions::DEFAULT_MAX_SESSION_SERVERS,
            session_commands: false,
            tool_search: None,
            replica_id: None,
            replica_heartbeat: crate::replica::DEFAULT_HEARTBEAT,
            unprefixed: Vec::new(),
        }
    }
}

/// Why the gateway could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// A non-loopback address without a bearer token.
    #[error(
        "refusing to serve on {addr} without a bearer token: a gateway reachable from other machines needs one (set EXTPOOL_GATEWAY_TOKEN or --token-file), or listen on 127.0.0.1"
    )]
    NeedsToken {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The audit log cannot be opened.
    #[error("cannot open the audit log {path}: {source}")]
    Audit {
        /// Its path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The host refused to open a view.
    #[error(transparent)]
    Host(#[from] HostError),
    /// Serving failed (binding, accepting, stdio).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
}

/// What every client session shares.
pub(crate) struct Shared {
    pub host: Host,
    pub options: GatewayOptions,
    pub bearer: Option<BearerToken>,
    pub metrics: Metrics,
    pub audit: Option<AuditLog>,
    pub notifier: Notifier,
    /// The view of clients without a session (2026-07-28 requests).
    pub stateless: View,
    /// The listed names of the stateless view's revision.
    pub stateless_names: NamesCache,
    /// The servers of [`GatewayOptions::unprefixed`].
    pub unprefixed: HashSet<String>,
    /// Resource subscriptions of every session.
    pub subscriptions: Subscriptions,
    /// The most verbose log level any client asked for and upstream
    /// servers were told (a rank of `LOG_LEVELS`; `usize::MAX`: none yet).
    pub upstream_log_level: AtomicUsize,
    pub instructions: String,
    /// Durable sessions, when a store is configured.
    pub sessions: Option<crate::sessions::Sessions>,
    /// Every endpoint's MCP sessions, resumable by any replica.
    pub resume: crate::resume::Resumable,
    /// This replica's id among those sharing the store.
    pub replica: extpool_state::ReplicaId,
    /// The tag of the SSE event ids this replica sends.
    pub event_tag: String,
    /// Whether the store answered this replica's last heartbeat.
    pub replica_health: crate::replica::StoreHealth,
    next_session: AtomicU64,
    pub stop: CancellationToken,
}

impl Shared {
    /// A new session id, unique among the replicas (it carries this
    /// replica's id).
    pub(crate) fn session_id(&self) -> String {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        format!("gw-{}-{n}", self.replica)
    }
}

/// The gateway: a host served to MCP clients. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").finish_non_exhaustive()
    }
}

impl Gateway {
    /// Serves `host` (started with `relay: true` so that servers' requests
    /// reach clients). Starts following the host's changes to send
    /// `list_changed` to clients.
    pub async fn new(host: Host, options: GatewayOptions) -> Result<Gateway, GatewayError> {
        let audit = match &options.audit_log {
            Some(path) => Some(AuditLog::open(path).map_err(|source| GatewayError::Audit {
                path: path.clone(),
                source,
            })?),
            None => None,
        };
        let stateless = host.session("gateway")?;
        let instructions = stateless
            .instructions()
            .await
            .into_iter()
            .map(|i| format!("## {}\n\n{}", i.source, i.text))
            .collect::<Vec<_>>()
            .join("\n\n");
        let replica = options
            .replica_id
            .clone()
            .unwrap_or_else(crate::replica::default_replica_id);
        let sessions = options.state.clone().map(|store| {
            crate::sessions::Sessions::new(
                store,
                replica.clone(),
                options.session_servers,
                options.max_session_servers,
            )
        });
        if let Some(sessions) = &sessions
            && let Err(e) = sessions.store().heartbeat(&replica).await
        {
            tracing::warn!(replica = %replica, "cannot register this replica in the state store: {e}");
        }
        let resume = crate::resume::Resumable::new(
            sessions.as_ref().map(|s| s.store().clone()),
            options.session_keep_alive,
        );
        let shared = Arc::new(Shared {
            sessions,
            resume,
            event_tag: crate::event_ids::replica_tag(replica.as_str()),
            replica,
            replica_health: crate::replica::StoreHealth::default(),
            bearer: options.bearer.as_deref().map(BearerToken::new),
            host,
            unprefixed: options.unprefixed.iter().cloned().collect(),
            options,
            metrics: Metrics::default(),
            audit,
            notifier: Notifier::default(),
            stateless: stateless.clone(),
            stateless_names: NamesCache::default(),
            subscriptions: Subscriptions::default(),
            upstream_log_level: AtomicUsize::new(usize::MAX),
            instructions,
            next_session: AtomicU64::new(1),
            stop: CancellationToken::new(),
        });
        let follower = shared.clone();
        let view = stateless.clone();
        tokio::spawn(async move {
            let stop = follower.stop.clone();
            tokio::select! {
                () = follower.notifier.follow(view) => {}
                () = stop.cancelled() => {}
            }
        });
        let follower = shared.clone();
        tokio::spawn(async move {
            let stop = follower.stop.clone();
            tokio::select! {
                () = follower.subscriptions.follow(stateless) => {}
                () = stop.cancelled() => {}
            }
        });
        if shared.sessions.is_some() {
            tokio::spawn(crate::replica::run(shared.clone()));
            let follower = shared.clone();
            tokio::spawn(async move {
                if let Some(sessions) = &follower.sessions {
                    sessions.follow_store(&follower).await;
                }
            });
        }
        Ok(Gateway { shared })
    }

    /// The host being served.
    pub fn host(&self) -> &Host {
        &self.shared.host
    }

    /// A handler for one client connection (stdio, or a test's transport).
    pub fn handler(&self) -> GatewayHandler {
        GatewayHandler::new(self.shared.clone())
    }

    /// The Prometheus text of `/metrics`.
    pub fn metrics(&self) -> String {
        self.shared.metrics.render(&self.shared.host.status())
    }

    /// Serves one client over this process's stdin and stdout until it
    /// disconnects.
    pub async fn serve_stdio(&self) -> Result<(), GatewayError> {
        use rmcp::ServiceExt;
        let transport =
            extpool_host::mcp::transport::stdio_server().map_err(|source| GatewayError::Io {
                what: "opening stdin and stdout".into(),
                source,
            })?;
        let service = self
            .handler()
            .serve(transport)
            .await
            .map_err(|e| GatewayError::Io {
                what: "serving stdio".into(),
                source: std::io::Error::other(e.to_string()),
            })?;
        let _ = service.waiting().await;
        Ok(())
    }

    /// Stops following changes and closes the host (every upstream server).
    pub async fn shutdown(&self) {
        self.shared.stop.cancel();
        if let Some(sessions) = &self.shared.sessions {
            sessions.close_all().await;
        }
        self.shared.host.shutdown().await;
    }
}
