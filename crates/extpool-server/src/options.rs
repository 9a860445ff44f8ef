//! How the gateway serves ([`GatewayOptions`]) and the defaults of each
//! setting. Read by every part of the gateway; names none of them, so any
//! module may hold the options without joining an import circle.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
/// (the shutdown path); those still running then are cancelled.
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
    /// longest ago are dropped.
    pub max_replay_bytes: usize,
    /// Most operator page event streams open at once; one more is
    /// refused.
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
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            audit_log: None,
            state: None,
            session_servers: true,
            max_session_servers: DEFAULT_MAX_SESSION_SERVERS,
            session_commands: false,
            private_session_servers: false,
            tool_search: None,
            replica_id: None,
            replica_heartbeat: DEFAULT_HEARTBEAT,
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
/// Default time a request body has to arrive in full
/// ([`GatewayOptions::body_read_timeout`]).
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default most per-session servers open at once, across sessions
/// ([`GatewayOptions::max_session_servers`]).
pub const DEFAULT_MAX_SESSION_SERVERS: usize = 64;
/// Default time between a replica's heartbeats
/// ([`GatewayOptions::replica_heartbeat`]); a replica silent for three of
/// them is taken for gone.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(5);
