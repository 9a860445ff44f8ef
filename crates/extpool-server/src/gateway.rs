//! The [`Gateway`]: a started [`Host`] served to MCP clients, with what
//! every client session shares (the notifier, metrics, the audit log, the
//! view of clients without a session).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use extpool_host::{Host, HostError, Naming, View, ViewPolicy};
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
/// Default most sessions one principal holds, of each kind (MCP sessions
/// on a replica, durable sessions in the store): a quarter of
/// [`DEFAULT_MAX_SESSIONS`], so no one caller takes them all.
pub const DEFAULT_SESSIONS_PER_PRINCIPAL: usize = 256;
/// Default most tool calls one client session has in flight at once (an
/// agent runs a handful in parallel; a client past this is looping).
pub const DEFAULT_MAX_CALLS_PER_SESSION: usize = 64;
/// How long a session-era MCP session is kept in memory with no request
/// or stream open (half an hour: an agent often idles between turns); its
/// stored record stays (twice as long, at least an hour), so its client
/// resumes it.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(1800);
/// Default bytes the answers kept for resuming hold, gateway-wide
/// ([`GatewayOptions::max_replay_bytes`]).
pub const DEFAULT_MAX_REPLAY_BYTES: usize = 64 * 1024 * 1024;
/// Default most operator page event streams open at once
/// ([`GatewayOptions::max_page_streams`]).
pub const DEFAULT_MAX_PAGE_STREAMS: usize = 16;
/// Default bytes an operator page stream's reader may fall behind before
/// it is dropped ([`GatewayOptions::page_stream_bytes`]).
pub const DEFAULT_PAGE_STREAM_BYTES: usize = 16 * 1024 * 1024;
/// Default time requests in flight get to finish once a shutdown began
/// ([`crate::shutdown`]); those still running then are cancelled.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// How the gateway serves.
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// The token clients must present; required when listening on a
    /// non-loopback address (or an issuer).
    pub bearer: Option<String>,
    /// The identity provider whose access tokens name who is calling
    /// (`--auth-issuer`): every request then needs a valid token, on
    /// loopback too, and sessions belong to the principal that made them.
    pub issuer: Option<Arc<extpool_auth::resource::TokenVerifier>>,
    /// `Host` header values accepted besides loopback names and the listen
    /// address itself (DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted (`https://app.example:443`); a request with
    /// any other `Origin` is refused. Empty: only loopback origins.
    pub allowed_origins: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Most session-era MCP sessions held at once, on every endpoint.
    pub max_sessions: usize,
    /// Most sessions one principal holds, of each kind: MCP sessions held
    /// on this replica (on every endpoint), and durable sessions in the
    /// store (`gateway.limits.sessions_per_principal`), so one caller
    /// cannot take what another needs.
    pub sessions_per_principal: usize,
    /// Most HTTP connections open at once.
    pub max_connections: usize,
    /// Time a connection has to send a whole request header, from
    /// connecting and from the end of its last response.
    pub header_read_timeout: Duration,
    /// Time a request body has to arrive in full.
    pub body_read_timeout: Duration,
    /// Most tool calls one client session (implicit or durable) has in
    /// flight at once; each 2026-07-28 request, having no session, is its
    /// own.
    pub max_calls_per_session: usize,
    /// How long an MCP session with no request or stream open is kept in
    /// memory (and a durable session's view and per-session servers); a
    /// stored record stays (twice as long, at least an hour) and is
    /// resumed on its next request.
    pub session_idle_timeout: Duration,
    /// How long requests in flight get to finish once a shutdown began
    /// ([`crate::shutdown`]); each one still running then is answered with
    /// an error saying the gateway shut down, and cancelled.
    pub shutdown_timeout: Duration,
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
    /// Whether a per-session server may be on a loopback or private
    /// network address (not only a public one). Link-local and cloud
    /// metadata addresses are refused whatever this says.
    pub private_session_servers: bool,
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
    /// How many tool calls each caller may make ([`crate::rate`]).
    pub rate_limits: extpool_host::config::RateLimitsConfig,
    /// The gateway's own client at its issuer, which exchanges callers'
    /// tokens for servers with `oauth.token_exchange`
    /// ([`crate::delegation`]); none: no exchange.
    pub delegation: Option<crate::delegation::DelegationOptions>,
    /// Whether the operator page offers a form to call each tool (off by
    /// default: it calls real tools).
    pub playground: bool,
    /// Most bytes the answers kept for resuming (SSE streams a client may
    /// reconnect to) hold, gateway-wide; past it the streams that finished
    /// longest ago are dropped ([`crate::front`]).
    pub max_replay_bytes: usize,
    /// Most operator page event streams open at once; one more is
    /// refused ([`crate::page`]).
    pub max_page_streams: usize,
    /// Most bytes of events an operator page stream's reader may fall
    /// behind before it is dropped (its connection closed).
    pub page_stream_bytes: usize,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self {
            bearer: None,
            issuer: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            sessions_per_principal: DEFAULT_SESSIONS_PER_PRINCIPAL,
            max_connections: crate::listener::DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: crate::listener::DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: crate::front::DEFAULT_BODY_READ_TIMEOUT,
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            audit_log: None,
            state: None,
            session_servers: true,
            max_session_servers: crate::sessions::DEFAULT_MAX_SESSION_SERVERS,
            session_commands: false,
            private_session_servers: false,
            tool_search: None,
            replica_id: None,
            replica_heartbeat: crate::sessions::replica::DEFAULT_HEARTBEAT,
            unprefixed: Vec::new(),
            rate_limits: extpool_host::config::RateLimitsConfig::default(),
            delegation: None,
            playground: false,
            max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
            max_page_streams: DEFAULT_MAX_PAGE_STREAMS,
            page_stream_bytes: DEFAULT_PAGE_STREAM_BYTES,
        }
    }
}

/// Why the gateway could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// A non-loopback address with nothing to tell callers apart: no
    /// bearer token, no issuer, no API key in the state store.
    #[error(
        "refusing to serve on {addr} without a bearer token: a gateway reachable from other machines needs one (set EXTPOOL_GATEWAY_TOKEN or --token-file), an API key in its state store, or an identity provider; or listen on 127.0.0.1"
    )]
    NeedsToken {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The audit log cannot be opened.
    #[error("cannot open the audit log {path}: {error}")]
    Audit {
        /// Its path.
        path: PathBuf,
        /// Why (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
    /// The host refused to open a view.
    #[error(transparent)]
    Host(#[from] HostError),
    /// Serving failed (binding, accepting, stdio).
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed (shown in the message, so not a `source()`).
        error: std::io::Error,
    },
}

/// The error serving stdio ended on, if it did not end at the end of
/// stdin: a failed read of stdin, or a failed write to stdout (but for the
/// client closing its end, which is its leaving). Never taken for the
/// client's leaving, so serve says it and exits non-zero.
fn stdio_failure(failure: &extpool_host::mcp::transport::Failure) -> Result<(), GatewayError> {
    use extpool_host::mcp::transport::IoFailure;
    match failure.take() {
        Some(IoFailure::Read(error)) => Err(GatewayError::Io {
            what: "reading the client's messages from stdin".into(),
            error,
        }),
        Some(IoFailure::Write(error)) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(GatewayError::Io {
                what: "writing to the client on stdout".into(),
                error,
            })
        }
        Some(IoFailure::Write(_)) | None => Ok(()),
    }
}

/// What every client session shares, by concern: the front end's
/// sessions and shutdown ([`Front`]), who is calling and what each caller
/// sees ([`Access`]), what operators watch ([`Ops`]), and the host's
/// shared state every connection's handler reads.
pub(crate) struct Shared {
    /// The host being served: its catalog, pool and views.
    pub host: Host,
    /// How the gateway was configured.
    pub options: GatewayOptions,
    /// The front end's sessions, their answers kept, and the shutdown.
    pub front: Front,
    /// Who is calling, and what each caller sees and may call.
    pub access: Access,
    /// What operators watch and keep.
    pub ops: Ops,
    /// Who hears the gateway's list changes (clients without a durable
    /// session).
    pub notifier: Notifier,
    /// Resource subscriptions of every session.
    pub subscriptions: Subscriptions,
    /// The tasks started through the gateway, and whose they are.
    pub tasks: Arc<crate::tasks::Tasks>,
    /// Calls of 2026-07-28 clients waiting for their answers to what an
    /// upstream asked ([`crate::input_rounds`]).
    pub rounds: crate::input_rounds::Rounds<extpool_host::GuardedCall>,
    /// The most verbose log level any client asked for and upstream
    /// servers were told (a rank of `LOG_LEVELS`; `usize::MAX`: none yet).
    pub upstream_log_level: AtomicUsize,
    /// What `initialize` tells clients of the gateway (its servers'
    /// instructions among them).
    pub instructions: String,
    /// Durable sessions, when a store is configured.
    pub sessions: Option<crate::sessions::Sessions>,
}

/// The front end's sessions and their lifetime.
pub(crate) struct Front {
    /// The MCP sessions held here, their slots and activity.
    pub live: Arc<crate::front::live::Live>,
    /// Every endpoint's MCP session records, resumable by any replica.
    pub resume: crate::front::resume::Resumable,
    /// What every session's resumable answers keep, against
    /// [`GatewayOptions::max_replay_bytes`].
    pub kept_streams: Arc<crate::front::kept::KeptStreams>,
    /// The tag of the SSE event ids this replica sends.
    pub event_tag: String,
    /// Numbers the implicit sessions this replica makes.
    next_session: AtomicU64,
    /// The shutdown began: no new connection, request or stream is taken
    /// ([`crate::shutdown`]). A child of `stop`.
    pub draining: CancellationToken,
    /// Everything ends: requests still running are answered with the
    /// shutdown error and cancelled.
    pub stop: CancellationToken,
}

/// Who is calling, and what each caller sees and may call.
pub(crate) struct Access {
    /// Who is calling: the gateway's token, API keys, an issuer's tokens.
    pub identity: Arc<crate::identity::Identity>,
    /// Each caller's tool-call buckets, when limits are set (shared by the
    /// replicas when the store is PostgreSQL); each request's caller
    /// carries its own ([`crate::handler::caller::Caller`]).
    pub rate_limits: Option<Arc<crate::rate::RateLimits>>,
    /// Each caller's tokens for servers reached with a token made from
    /// its own ([`crate::delegation`]).
    pub delegation: crate::delegation::Delegation,
    /// Callers' logins to their own servers in progress.
    pub logins: crate::login::Logins,
    /// Each caller's own view for requests without a session.
    pub callers: crate::handler::caller_views::CallerViews,
    /// The view of clients without a session (2026-07-28 requests).
    pub stateless: View,
    /// The listed prompt names of the stateless view's revision.
    pub stateless_names: NamesCache,
    /// What every client's model sees and may call, before a session's own
    /// grants: the gateway's naming, its unprefixed servers, its own tools
    /// and tool search. Every view without grants shares it (and so shares
    /// one compiled table per revision).
    pub policy: Arc<ViewPolicy>,
    /// [`Access::policy`] with `CloseSession` among the gateway's own
    /// tools: what durable sessions' grants refine (they share one
    /// compiled table per revision between them).
    pub session_policy: Arc<ViewPolicy>,
    /// The servers of [`GatewayOptions::unprefixed`].
    pub unprefixed: HashSet<String>,
}

/// What operators watch and keep.
pub(crate) struct Ops {
    /// The counters `/metrics` shows.
    pub metrics: Arc<Metrics>,
    /// The audit log of calls, when one is configured.
    pub audit: Option<AuditLog>,
    /// What the operator page's streams share ([`crate::page`]).
    pub page: crate::page::PageState,
    /// This replica's id among those sharing the store.
    pub replica: extpool_state::ReplicaId,
    /// Whether the store answered this replica's last heartbeat.
    pub replica_health: crate::sessions::replica::StoreHealth,
}

impl Shared {
    /// A new session id, unique among the replicas (it carries this
    /// replica's id).
    pub(crate) fn session_id(&self) -> String {
        let n = self.front.next_session.fetch_add(1, Ordering::Relaxed);
        format!("gw-{}-{n}", self.ops.replica)
    }
}

/// Runs `work` in its own task until it ends or the gateway stops.
fn until_stopped(shared: &Shared, work: impl Future<Output = ()> + Send + 'static) {
    let stop = shared.front.stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = work => {}
            () = stop.cancelled() => {}
        }
    });
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
                error: source,
            })?),
            None => None,
        };
        let delegation = crate::delegation::Delegation::new(
            &host,
            options.issuer.clone(),
            options.delegation.clone(),
        );
        if let Err(why) = delegation.check(&host) {
            // Every other server works; each call of this one says why not.
            tracing::warn!("{why}");
        }
        let stateless = host.session("gateway")?;
        let policy = ViewPolicy::builder()
            .naming(Naming::Client)
            .unprefixed(options.unprefixed.iter().cloned())
            .front_tools(crate::handler::source_tools::TOOLS)
            .deferral(options.tool_search.clone())
            .build();
        stateless.set_policy(policy.clone());
        let session_policy = policy
            .to_builder()
            .front_tools(crate::handler::source_tools::SESSION_TOOLS)
            .build();
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
            .unwrap_or_else(crate::sessions::replica::default_replica_id);
        let sessions = options.state.clone().map(|store| {
            crate::sessions::Sessions::new(
                store,
                replica.clone(),
                options.session_servers,
                options.max_session_servers,
                options.sessions_per_principal,
            )
        });
        if let Some(sessions) = &sessions
            && let Err(e) = sessions.store().heartbeat(&replica).await
        {
            tracing::warn!(replica = %replica, "cannot register this replica in the state store: {e}");
        }
        let resume =
            crate::front::resume::Resumable::new(sessions.as_ref().map(|s| s.store().clone()));
        let stop = CancellationToken::new();
        let live = Arc::new(crate::front::live::Live::new(
            options.max_sessions,
            options.sessions_per_principal,
            options.session_idle_timeout,
        ));
        let event_tag = crate::front::event_ids::replica_tag(replica.as_str());
        let kept_streams = crate::front::kept::KeptStreams::new(options.max_replay_bytes);
        let page = crate::page::PageState::new(options.max_page_streams, options.page_stream_bytes);
        let rounds = crate::input_rounds::Rounds::new(event_tag.clone());
        let front = Front {
            live,
            resume,
            kept_streams,
            event_tag,
            next_session: AtomicU64::new(1),
            draining: stop.child_token(),
            stop,
        };
        let access = Access {
            identity: Arc::new(crate::identity::Identity::new(
                options.bearer.as_deref().map(BearerToken::new),
                options.issuer.clone(),
                options.state.clone(),
            )),
            rate_limits: crate::rate::RateLimits::with_store(
                &options.rate_limits,
                options.state.as_ref(),
            )
            .map(Arc::new),
            delegation,
            logins: crate::login::Logins::default(),
            callers: crate::handler::caller_views::CallerViews::default(),
            stateless: stateless.clone(),
            stateless_names: NamesCache::default(),
            policy,
            session_policy,
            unprefixed: options.unprefixed.iter().cloned().collect(),
        };
        let ops = Ops {
            metrics: Arc::default(),
            audit,
            page,
            replica,
            replica_health: crate::sessions::replica::StoreHealth::default(),
        };
        let shared = Arc::new(Shared {
            host,
            options,
            front,
            access,
            ops,
            notifier: Notifier::default(),
            subscriptions: Subscriptions::default(),
            tasks: Arc::default(),
            rounds,
            upstream_log_level: AtomicUsize::new(usize::MAX),
            instructions,
            sessions,
        });
        let follower = shared.clone();
        let view = stateless.clone();
        until_stopped(&shared, async move { follower.notifier.follow(view).await });
        let follower = shared.clone();
        until_stopped(&shared, async move {
            follower.subscriptions.follow(stateless).await
        });
        until_stopped(&shared, crate::page::follow(shared.clone()));
        until_stopped(&shared, crate::page::events::produce(shared.clone()));
        tokio::spawn(crate::front::reaper::run(shared.clone()));
        if shared.sessions.is_some() {
            tokio::spawn(crate::sessions::replica::run(shared.clone()));
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

    /// The tools a new client of `/mcp` sees in `tools/list` (every
    /// server's visible tools, the built-ins and the gateway's own), in
    /// that answer's order: what `extpool serve` counts when it starts.
    pub fn listed_tools(&self) -> Vec<rmcp::model::Tool> {
        self.handler().listed_tools().tools
    }

    /// How many sessions (MCP sessions, and durable sessions' views) have
    /// been ended for being idle, as it changes: an event to wait on.
    pub fn expirations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.front.live.expirations()
    }

    /// The Prometheus text of `/metrics`.
    pub fn metrics(&self) -> String {
        self.shared.ops.metrics.render(&self.shared.host.status())
    }

    /// Resolves once the gateway stops taking work: a shutdown began
    /// ([`crate::shutdown`]), from [`Gateway::serve_http_until`]'s or
    /// [`Gateway::serve_stdio_until`]'s signal, or [`Gateway::shutdown`].
    pub fn stopping(&self) -> impl Future<Output = ()> + Send + 'static {
        let draining = self.shared.front.draining.clone();
        async move { draining.cancelled().await }
    }

    /// The shutdown's tokens and bound.
    pub(crate) fn shutdown_path(&self) -> crate::shutdown::Path {
        crate::shutdown::Path {
            draining: self.shared.front.draining.clone(),
            stop: self.shared.front.stop.clone(),
            grace: self.shared.options.shutdown_timeout,
        }
    }

    /// Serves one client over this process's stdin and stdout until it
    /// disconnects (or [`Gateway::shutdown`]).
    pub async fn serve_stdio(&self) -> Result<(), GatewayError> {
        self.serve_stdio_until(std::future::pending()).await
    }

    /// Serves one client over stdin and stdout until it disconnects, or
    /// until `shutdown` completes: then the client's new requests are
    /// refused, its requests in flight get
    /// [`GatewayOptions::shutdown_timeout`] to finish, and each one still
    /// running is answered with the shutdown error ([`crate::shutdown`]).
    /// Call [`Gateway::shutdown`] afterwards to close the upstreams.
    ///
    /// Only the end of stdin is the client's leaving: a pause in its input
    /// is waited out, whatever stdin and stdout are, and a read of stdin
    /// that fails (or a write to stdout, but for the client closing it) is
    /// an `Err`. A message the client may not send is answered with the
    /// JSON-RPC error HTTP answers it with ([`crate::check`]), and the
    /// session goes on.
    pub async fn serve_stdio_until(
        &self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        use rmcp::ServiceExt;
        let mut stdio =
            extpool_host::mcp::transport::stdio_server().map_err(|source| GatewayError::Io {
                what: "opening stdin and stdout".into(),
                error: source,
            })?;
        // A message that is not one the client may send is answered as
        // over HTTP, by the same rule, and the session goes on.
        stdio.set_screen(Box::new(crate::check::stdio_reply));
        let handler = self.handler();
        crate::handler::stdio::over_stdio(&mut stdio, &handler);
        let failure = stdio.failure();
        let path = self.shutdown_path();
        let transport = crate::shutdown::stdio::Draining::new(
            stdio,
            path.draining.clone(),
            path.stop.clone(),
            path.grace,
        );
        tokio::pin!(shutdown);
        let service = tokio::select! {
            service = crate::handler::stdio::Stdio(handler).serve(transport) => match service {
                Ok(service) => service,
                Err(e) => {
                    stdio_failure(&failure)?;
                    return Err(GatewayError::Io {
                        what: "serving stdio".into(),
                        error: std::io::Error::other(e.to_string()),
                    });
                }
            },
            // Stopped before the client's initialize: nothing in flight.
            () = &mut shutdown => return Ok(()),
            () = path.draining.cancelled() => return Ok(()),
        };
        let waiting = service.waiting();
        tokio::pin!(waiting);
        tokio::select! {
            _ = &mut waiting => return stdio_failure(&failure),
            () = &mut shutdown => {}
            () = path.draining.cancelled() => {}
        }
        path.wind_down("the stdio client's requests", async {
            let _ = waiting.await;
        })
        .await;
        stdio_failure(&failure)
    }

    /// The end of the shutdown path ([`crate::shutdown`]), and all of it
    /// when called alone: stops taking work, answers each request still
    /// running with the shutdown error and cancels it (without waiting for
    /// it), closes the durable sessions (the replica leaves the replica
    /// set) and the host (every upstream server).
    pub async fn shutdown(&self) {
        self.shutdown_path().cancel();
        if let Some(sessions) = &self.shared.sessions {
            sessions.close_all().await;
        }
        self.shared.host.shutdown().await;
    }
}
