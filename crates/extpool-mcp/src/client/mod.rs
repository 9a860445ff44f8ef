//! [`McpClient`]: one MCP server behind one live rmcp connection, with
//! timeouts and the reconnect rules of the behaviour doc.
//!
//! - **Concurrency.** The current connection sits in an `ArcSwapOption`; a
//!   call loads it without locking and runs on rmcp's pipelined peer, so any
//!   number of tasks share one connection and no lock is held around a call.
//! - **Timeouts.** rmcp has none by default. Every request is bounded by the
//!   server's `request_timeout_ms`; on expiry the request future is dropped,
//!   rmcp sends `notifications/cancelled`, and the connection stays usable.
//!   Connect + initialize is bounded by `startup_timeout_ms`.
//! - **Reconnect.** When a call finds the connection gone (child exited,
//!   stream broke, server unreachable) — or a stdio server's output ends
//!   while the call waits ([`Connection::ended`]) — it asks for a reconnect of *that*
//!   connection generation. One caller performs it under the lifecycle lock;
//!   every other caller that lost the same generation waits and shares the
//!   outcome, so 50 failing calls cause one new process. The interrupted
//!   operation is then retried once. If reconnecting fails, the caller gets
//!   `MCP server "<name>" unavailable after reconnect`.
//! - **No replay of server-declared failures** (see [`crate::classify`]).

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use rmcp::model::{ServerCapabilities, ServerPeerInfo};
use rmcp::service::RoleClient;
use rmcp::{Peer, ServiceError};

use crate::classify::{Failure, classify};
use crate::config::{McpServerConfig, ReconnectPolicy};
use crate::connection::{self, Connection, Plan};
use crate::describe::describe;
use crate::error::{ClientError, ConnectFailure, SharedError};
use crate::limits::Exceeded;
mod link;
mod ops;
mod repeat;
mod whole;

pub(crate) use link::Link;
pub(crate) use repeat::Repeat;
use repeat::ToolHints;

use crate::handler::ChangeSignals;
use crate::http::{HttpSettings, TokenSource};
use crate::name::ServerName;
use crate::progress::ProgressRoutes;
use crate::redact::Redactor;
use crate::stdio::SpawnPolicy;
use extpool_core::address::AddressRule;

/// Default per-request timeout when the config sets none.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default connect + initialize timeout when the config sets none.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The HTTP clients shared by every HTTP server of a pool, built on first
/// use: one that keeps idle connections for reuse, one that opens a
/// connection per request (for servers that stall on reuse, see
/// [`crate::http`]), and the names of those servers.
#[derive(Clone, Default)]
pub struct SharedHttpClient {
    reusing: Arc<OnceLock<reqwest::Client>>,
    fresh: Arc<OnceLock<reqwest::Client>>,
    stalling: Arc<parking_lot::Mutex<std::collections::HashSet<String>>>,
    /// The clients of servers under an address rule, by rule and reuse.
    ruled: Arc<parking_lot::Mutex<std::collections::HashMap<(AddressRule, bool), reqwest::Client>>>,
}

impl std::fmt::Debug for SharedHttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedHttpClient")
    }
}

/// Host-wide settings every client of a pool shares.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Rules for starting stdio servers.
    pub spawn: SpawnPolicy,
    /// Settings of the shared HTTP client.
    pub http: HttpSettings,
    /// Per-request timeout for servers whose config sets none.
    pub request_timeout: Duration,
    /// Startup timeout for servers whose config sets none.
    pub startup_timeout: Duration,
    /// How long a close waits for a server to exit before leaving it to be killed.
    pub close_timeout: Duration,
    /// Largest message accepted from a server whose config sets none
    /// (`max_message_bytes`), in bytes.
    pub max_message_bytes: u64,
    /// How much each server may send on its own (log messages, progress,
    /// `list_changed`, requests), per connection.
    pub notifications: crate::flood::NotificationLimits,
    /// Where bearer tokens for HTTP servers come from.
    pub tokens: TokenSource,
    /// The HTTP client, shared by every clone of these options.
    pub http_client: SharedHttpClient,
    /// OAuth for servers with an `oauth` profile (by default: stored grants
    /// only, never a browser).
    pub auth: extpool_auth::AuthContext,
    /// Who answers servers' elicitation requests (none: not declared).
    pub elicitation: Option<crate::elicitation::Elicitation>,
    /// Declare sampling and elicitation and pass servers' requests and log
    /// messages to the client behind the call in flight (a gateway's
    /// clients; see [`extpool_core::CallContext`]).
    pub relay: bool,
    /// Where every server's stderr lines are told as they come (besides
    /// the tail kept for errors): see [`crate::pool::SessionConnectionPool::stderr_lines`].
    pub stderr_lines: crate::stderr::StderrLines,
    /// Run each stdio connection on its own thread (a current-thread
    /// runtime owning the child, rmcp's service task and the transport)
    /// when it is made on a multi-thread runtime, so a call crosses threads
    /// only to reach the connection and back (default on). Off: everything
    /// runs on the caller's runtime. HTTP connections are not affected.
    /// See [`crate::driver_thread_name`].
    pub stdio_driver: bool,
    /// The pool's mark on what it sends its servers ([`crate::via`]).
    pub via: crate::via::Via,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            spawn: SpawnPolicy::default(),
            http: HttpSettings::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            close_timeout: Duration::from_secs(5),
            max_message_bytes: crate::limits::DEFAULT_MAX_MESSAGE_BYTES,
            notifications: crate::flood::NotificationLimits::default(),
            tokens: TokenSource::default(),
            http_client: SharedHttpClient::default(),
            auth: extpool_auth::AuthContext::default(),
            elicitation: None,
            relay: false,
            stderr_lines: crate::stderr::StderrLines::default(),
            stdio_driver: true,
            via: crate::via::Via::new(),
        }
    }
}

impl ClientOptions {
    /// The shared HTTP client, built on first use: it keeps idle
    /// connections for reuse unless [`HttpSettings::keep_alive`] is off.
    pub fn http_client(&self) -> &reqwest::Client {
        let shared = &self.http_client;
        if self.http.keep_alive {
            shared.reusing.get_or_init(|| self.http.build_client(true))
        } else {
            self.fresh_http_client()
        }
    }

    /// The shared HTTP client that opens a connection per request.
    pub fn fresh_http_client(&self) -> &reqwest::Client {
        self.http_client
            .fresh
            .get_or_init(|| self.http.build_client(false))
    }

    /// The HTTP client for server `name`: a connection per request once it
    /// was found to stall on a reused one ([`ClientOptions::note_stalling`]).
    pub fn http_client_for(&self, name: &str) -> &reqwest::Client {
        if self.is_stalling(name) {
            self.fresh_http_client()
        } else {
            self.http_client()
        }
    }

    /// The HTTP client of server `name` under address rule `rule`
    /// (`None`: the pool's shared one, [`ClientOptions::http_client_for`]),
    /// or (`fresh`) one that opens a connection per request.
    pub fn http_client_under(
        &self,
        name: &str,
        rule: Option<AddressRule>,
        fresh: bool,
    ) -> reqwest::Client {
        let Some(rule) = rule else {
            return if fresh {
                self.fresh_http_client().clone()
            } else {
                self.http_client_for(name).clone()
            };
        };
        let reuse = !fresh && self.http.keep_alive && !self.is_stalling(name);
        self.http_client
            .ruled
            .lock()
            .entry((rule, reuse))
            .or_insert_with(|| self.http.build_client_with(reuse, Some(rule)))
            .clone()
    }

    /// Whether server `name` was found to stall on a reused connection.
    pub fn is_stalling(&self, name: &str) -> bool {
        self.http_client.stalling.lock().contains(name)
    }

    /// Remembers that server `name` stalls on a reused connection: it gets
    /// a connection per request from now on (for this pool's life).
    pub fn note_stalling(&self, name: &str) {
        self.http_client.stalling.lock().insert(name.to_owned());
    }
}

#[derive(Default)]
struct Lifecycle {
    ever_connected: bool,
    /// The last failed (re)connect: the generation it tried to replace and its error.
    last_failure: Option<(Option<u64>, ClientError)>,
}

struct Inner {
    name: ServerName,
    config: Arc<McpServerConfig>,
    plan: Plan,
    options: Arc<ClientOptions>,
    request_timeout: Duration,
    startup_timeout: Duration,
    max_message_bytes: u64,
    reconnect: ReconnectPolicy,
    conn: ArcSwapOption<Connection>,
    lifecycle: tokio::sync::Mutex<Lifecycle>,
    /// Bumped each time a (re)connect attempt finished, success or failure.
    attempts_done: AtomicU64,
    generations: AtomicU64,
    connects: AtomicU64,
    signals: Arc<ChangeSignals>,
    progress: Arc<ProgressRoutes>,
    callers: Arc<crate::callers::Callers>,
    /// Which tools the server marks safe to repeat (see [`Repeat`]).
    hints: ToolHints,
    /// What the latest listings left out.
    skipped: crate::listing::SkippedNotes,
    /// The listed tools' header-promoted arguments (2026-07-28 HTTP).
    params: Arc<crate::param_headers::ParamHeaders>,
    /// Values passed to the server, masked in its stderr.
    redactor: Redactor,
    /// What the flood gates of this client's connections let through.
    flood: Arc<parking_lot::Mutex<crate::flood::FloodStats>>,
    closed: AtomicBool,
    /// Requests running now (see [`McpClient::drained`]).
    in_flight: AtomicUsize,
    /// Woken when `in_flight` drops to zero.
    idle: tokio::sync::Notify,
}

/// Counts one request as running while alive.
struct InFlight<'a>(&'a Inner);

impl<'a> InFlight<'a> {
    fn enter(inner: &'a Inner) -> Self {
        inner.in_flight.fetch_add(1, Ordering::AcqRel);
        Self(inner)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// A client for one MCP server; cheap to clone (all clones share one connection).
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.inner.name)
            .field("plan", &self.inner.plan)
            .field("connected", &self.is_connected())
            .finish()
    }
}

enum Attempt {
    /// The connection is gone; `sent` is false when the request never left.
    Lost {
        cause: SharedError,
        sent: bool,
    },
    /// HTTP 404 for the session.
    Expired,
    Failed(ClientError),
}

impl McpClient {
    /// Checks the config and returns a client that connects on first use.
    pub fn new(
        name: ServerName,
        config: McpServerConfig,
        options: Arc<ClientOptions>,
    ) -> Result<Self, ClientError> {
        let plan = Plan::new(&name, &config, &options)?;
        let token = options.tokens.token_for(&name);
        let redactor = Redactor::for_server(&config, token.as_ref().map(|t| t.expose()));
        let request_timeout = config
            .request_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(options.request_timeout);
        let max_message_bytes = config
            .max_message_bytes
            .unwrap_or(options.max_message_bytes);
        let startup_timeout = config
            .startup_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(options.startup_timeout);
        Ok(Self {
            inner: Arc::new(Inner {
                name,
                reconnect: config.reconnect,
                config: Arc::new(config),
                plan,
                options,
                request_timeout,
                startup_timeout,
                max_message_bytes,
                conn: ArcSwapOption::empty(),
                lifecycle: tokio::sync::Mutex::new(Lifecycle::default()),
                attempts_done: AtomicU64::new(0),
                generations: AtomicU64::new(0),
                connects: AtomicU64::new(0),
                signals: Arc::new(ChangeSignals::default()),
                progress: Arc::new(ProgressRoutes::default()),
                callers: Arc::new(crate::callers::Callers::default()),
                hints: ToolHints::default(),
                skipped: crate::listing::SkippedNotes::default(),
                params: Arc::default(),
                redactor,
                flood: Arc::default(),
                closed: AtomicBool::new(false),
                in_flight: AtomicUsize::new(0),
                idle: tokio::sync::Notify::new(),
            }),
        })
    }

    /// Checks the config and connects (spawn or HTTP, then initialize).
    pub async fn connect(
        name: ServerName,
        config: McpServerConfig,
        options: Arc<ClientOptions>,
    ) -> Result<Self, ClientError> {
        let client = Self::new(name, config, options)?;
        client.ensure_connected().await?;
        Ok(client)
    }

    /// Connects now if there is no live connection.
    pub async fn ensure_connected(&self) -> Result<(), ClientError> {
        self.live().await.map(drop)
    }

    /// The server's name.
    pub fn name(&self) -> &ServerName {
        &self.inner.name
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.inner.config
    }

    /// The per-request timeout in force.
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// What the server said about itself at initialize (current connection).
    pub fn server_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.inner.conn.load().as_ref()?.peer.peer_info()
    }

    /// The server's capabilities (current connection).
    pub fn capabilities(&self) -> Option<ServerCapabilities> {
        self.server_info().map(|i| i.capabilities.clone())
    }

    /// The current rmcp peer, for callers that need raw access (progress
    /// tokens, subscriptions). Calls made on it bypass timeouts and reconnect.
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        self.inner.conn.load().as_ref().map(|c| c.peer.clone())
    }

    /// True while a connection exists and its transport is open.
    pub fn is_connected(&self) -> bool {
        self.inner
            .conn
            .load()
            .as_ref()
            .is_some_and(|c| c.is_alive())
    }

    /// True once [`McpClient::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// How many connections were established so far (1 + reconnects).
    pub fn connection_count(&self) -> u64 {
        self.inner.connects.load(Ordering::Acquire)
    }

    /// Process id of the current stdio child, if any.
    pub fn pid(&self) -> Option<u32> {
        self.inner.conn.load().as_ref().and_then(|c| c.pid)
    }

    /// The last lines the current child wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.inner
            .conn
            .load()
            .as_ref()
            .map(|c| c.stderr_lines())
            .unwrap_or_default()
    }

    /// The change counters and broadcast fed by the server's `list_changed`
    /// notifications (and by reconnects).
    pub fn signals(&self) -> &Arc<ChangeSignals> {
        &self.inner.signals
    }

    /// What the flood gates of this client's connections let through and
    /// dropped so far (see the `flood` module).
    pub fn flood_stats(&self) -> crate::flood::FloodStats {
        *self.inner.flood.lock()
    }

    /// Requests running on this client now (calls, listings, reads), the
    /// retries of a reconnect included.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::Acquire)
    }

    /// Waits until no request is running on this client: a connection being
    /// retired (its server replaced) drains its calls before it closes.
    /// Returns at once when none is running.
    pub async fn drained(&self) {
        loop {
            let idle = self.inner.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Closes the current connection (a stdio child and its process group
    /// exit or are killed) and connects again: an operator's restart of
    /// one server. Calls made meanwhile wait for the new connection, under
    /// the reconnect rules.
    pub async fn restart(&self) -> Result<(), ClientError> {
        if self.is_closed() {
            return Err(ClientError::Closed {
                server: self.inner.name.clone(),
            });
        }
        {
            let _guard = self.inner.lifecycle.lock().await;
            if let Some(conn) = self.inner.conn.swap(None) {
                conn.close(self.inner.options.close_timeout).await;
                tracing::info!(server = %self.inner.name, "MCP server restarting: its connection closed");
            }
        }
        self.ensure_connected().await
    }

    /// Closes the connection (the child and its process group exit or are
    /// killed) and refuses further calls.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        let _guard = self.inner.lifecycle.lock().await;
        if let Some(conn) = self.inner.conn.swap(None) {
            conn.close(self.inner.options.close_timeout).await;
            tracing::debug!(server = %self.inner.name, "MCP client closed");
        }
    }

    /// Runs one request with its timeout and the reconnect rules: after a
    /// dropped connection (or an HTTP session the server no longer knows)
    /// the client reconnects once, and sends the request again only when it
    /// never left or `repeat` says repeating it is harmless.
    ///
    /// The request runs in a span of its own ([`crate::trace::client_span`]),
    /// the child of the caller's, so a trace follows a call to its server.
    async fn run<T, F, Fut>(
        &self,
        operation: &'static str,
        repeat: Repeat<'_>,
        timeout: Option<Duration>,
        f: F,
    ) -> Result<T, ClientError>
    where
        F: Fn(Link) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        use tracing::Instrument;
        let span = crate::trace::client_span(operation, self.inner.name.as_str(), repeat.target());
        async move {
            let _flight = InFlight::enter(&self.inner);
            let timeout = timeout.unwrap_or(self.inner.request_timeout);
            let conn = self.live().await?;
            let server = || self.inner.name.clone();
            let (conn, sent) = match self.attempt(&conn, operation, timeout, &f).await {
                Ok(value) => return Ok(value),
                Err(Attempt::Failed(error)) => return Err(error),
                Err(Attempt::Expired) => {
                    // The protocol asks for a new session; this request may have
                    // been acted on, so it is only re-sent when that is harmless.
                    tracing::info!(server = %self.inner.name, operation, "HTTP 404 for the session; starting a new one");
                    let expired = || ClientError::SessionExpired {
                        server: server(),
                        operation,
                    };
                    let Ok(conn) = self.establish(Some(conn.generation)).await else {
                        return Err(expired());
                    };
                    if !self.may_repeat(repeat, &conn).await {
                        return Err(expired());
                    }
                    (conn, true)
                }
                Err(Attempt::Lost { cause, sent }) => {
                    if self.inner.reconnect.attempts == 0 {
                        return Err(ClientError::Disconnected {
                            server: server(),
                            cause,
                        });
                    }
                    tracing::warn!(server = %self.inner.name, operation, cause = %describe(cause.as_ref()), "MCP connection lost; reconnecting");
                    (self.establish(Some(conn.generation)).await?, sent)
                }
            };
            if sent && !self.may_repeat(repeat, &conn).await {
                return Err(ClientError::Interrupted {
                    server: server(),
                    operation,
                    target: repeat.target().map(str::to_owned),
                });
            }
            match self.attempt(&conn, operation, timeout, &f).await {
                Ok(value) => Ok(value),
                Err(Attempt::Failed(error)) => Err(error),
                Err(Attempt::Expired) => Err(ClientError::SessionExpired {
                    server: server(),
                    operation,
                }),
                Err(Attempt::Lost { cause, .. }) => Err(ClientError::UnavailableAfterReconnect {
                    server: server(),
                    cause,
                    stderr: conn.stderr_lines(),
                }),
            }
        }
        .instrument(span)
        .await
    }

    async fn attempt<T, F, Fut>(
        &self,
        conn: &Connection,
        operation: &'static str,
        timeout: Duration,
        f: &F,
    ) -> Result<T, Attempt>
    where
        F: Fn(Link) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        if !conn.is_alive() {
            return Err(Attempt::Lost {
                cause: Arc::new(ServiceError::TransportClosed),
                sent: false,
            });
        }
        let server = || self.inner.name.clone();
        // A request the server's death leaves unanswered fails then, not at
        // its timeout: it may have been written (so `sent`), or be waiting
        // in rmcp's queue, which rmcp reads no more but drops only once its
        // service has wound down (handlers finished, the child reaped).
        let call = f(Link::of(conn));
        let answered = async {
            tokio::select! {
                biased;
                result = call => Some(result),
                () = conn.ended() => None,
            }
        };
        match tokio::time::timeout(timeout, answered).await {
            Ok(Some(Ok(value))) => Ok(value),
            Ok(None) => Err(Attempt::Lost {
                cause: Arc::new(ServiceError::TransportClosed),
                sent: true,
            }),
            Err(_elapsed) => {
                tracing::debug!(server = %self.inner.name, operation, ?timeout, "MCP request timed out");
                Err(Attempt::Failed(ClientError::Timeout {
                    server: server(),
                    operation,
                    timeout_ms: timeout.as_millis() as u64,
                }))
            }
            Ok(Some(Err(error))) => Err(match classify(error) {
                Failure::Lost { cause, sent } => Attempt::Lost { cause, sent },
                Failure::SessionExpired => Attempt::Expired,
                Failure::Rpc(mut error) => {
                    // The server's own words may quote what it was given.
                    if let Cow::Owned(masked) = self.inner.redactor.redact(&error.message) {
                        error.message = masked.into();
                    }
                    Attempt::Failed(ClientError::Rpc {
                        server: server(),
                        error,
                    })
                }
                Failure::Http {
                    status,
                    retry_after,
                } => Attempt::Failed(ClientError::HttpStatus {
                    server: server(),
                    status,
                    retry_after,
                }),
                Failure::Auth { challenge } => Attempt::Failed(ClientError::AuthRequired {
                    server: server(),
                    challenge,
                }),
                Failure::Limit(Exceeded::Size { size, limit }) => {
                    Attempt::Failed(ClientError::MessageTooLarge {
                        server: server(),
                        operation,
                        size,
                        limit,
                    })
                }
                Failure::Limit(Exceeded::Depth { limit }) => {
                    Attempt::Failed(ClientError::MessageTooDeep {
                        server: server(),
                        operation,
                        limit,
                    })
                }
                Failure::Unreadable(reason) => {
                    // Parts of the server's answer may be quoted in it.
                    let reason = self.inner.redactor.redact(&reason).into_owned();
                    Attempt::Failed(ClientError::UnreadableAnswer {
                        server: server(),
                        operation,
                        reason,
                    })
                }
                Failure::Timeout => Attempt::Failed(ClientError::Timeout {
                    server: server(),
                    operation,
                    timeout_ms: timeout.as_millis() as u64,
                }),
                Failure::OAuth(reason) => Attempt::Failed(ClientError::OAuth {
                    server: server(),
                    reason,
                }),
                Failure::Other(error) => Attempt::Failed(ClientError::Protocol {
                    server: server(),
                    operation,
                    error,
                }),
            }),
        }
    }

    /// The current connection, connecting first when there is none.
    async fn live(&self) -> Result<Arc<Connection>, ClientError> {
        if self.is_closed() {
            return Err(ClientError::Closed {
                server: self.inner.name.clone(),
            });
        }
        if let Some(conn) = self.inner.conn.load_full() {
            return Ok(conn);
        }
        self.establish(None).await
    }

    /// Connects or reconnects, once for all concurrent callers.
    ///
    /// `broken` is the generation the caller saw fail (`None`: there was no
    /// connection). Callers that lost the same generation, or that waited
    /// while another caller's attempt ran, share that attempt's outcome.
    async fn establish(&self, broken: Option<u64>) -> Result<Arc<Connection>, ClientError> {
        // Boxed: connecting (a spawn, an HTTP handshake) makes a future of
        // some 15 KiB, which would otherwise be part of every request's
        // future and be moved with it, though requests seldom connect.
        Box::pin(self.connect_once(broken)).await
    }

    /// [`Self::establish`]'s work.
    async fn connect_once(&self, broken: Option<u64>) -> Result<Arc<Connection>, ClientError> {
        let inner = &self.inner;
        let seen = inner.attempts_done.load(Ordering::Acquire);
        let mut lifecycle = inner.lifecycle.lock().await;
        if self.is_closed() {
            return Err(ClientError::Closed {
                server: inner.name.clone(),
            });
        }
        if let Some(conn) = inner.conn.load_full()
            && conn.is_alive()
            && broken != Some(conn.generation)
        {
            return Ok(conn);
        }
        if let Some((failed_for, error)) = &lifecycle.last_failure
            && (inner.attempts_done.load(Ordering::Acquire) != seen
                || (broken.is_some() && *failed_for == broken))
        {
            return Err(error.clone());
        }
        if let Some(old) = inner.conn.swap(None) {
            if old.is_alive() {
                // Replaced while still open (a new HTTP session): requests in
                // flight on it finish there; it closes when the last one drops it.
                drop(old);
            } else {
                let timeout = inner.options.close_timeout;
                tokio::spawn(async move { old.close(timeout).await });
            }
        }
        let reconnecting = lifecycle.ever_connected;
        let attempts = if reconnecting {
            inner.reconnect.attempts.max(1)
        } else {
            1
        };
        let mut failure = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                let factor = 1u64 << (attempt - 1).min(16);
                let delay =
                    Duration::from_millis(inner.reconnect.backoff_ms.saturating_mul(factor));
                tokio::time::sleep(delay).await;
            }
            let generation = inner.generations.fetch_add(1, Ordering::AcqRel) + 1;
            let outcome = connection::connect(connection::Attempt {
                name: &inner.name,
                plan: &inner.plan,
                options: &inner.options,
                signals: &inner.signals,
                progress: &inner.progress,
                callers: &inner.callers,
                generation,
                startup: inner.startup_timeout,
                max_message_bytes: inner.max_message_bytes,
                redactor: &inner.redactor,
                flood: &inner.flood,
                protocol: inner.config.protocol,
                params: &inner.params,
            })
            .await;
            match outcome {
                Ok(conn) => {
                    inner.connects.fetch_add(1, Ordering::AcqRel);
                    inner.conn.store(Some(conn.clone()));
                    lifecycle.ever_connected = true;
                    lifecycle.last_failure = None;
                    inner.attempts_done.fetch_add(1, Ordering::AcqRel);
                    if reconnecting {
                        tracing::info!(server = %inner.name, generation = conn.generation, "MCP server reconnected");
                        inner.signals.bump_all();
                    }
                    return Ok(conn);
                }
                Err(f) => {
                    tracing::warn!(server = %inner.name, attempt = attempt + 1, of = attempts, error = %f.0, "MCP connect failed");
                    failure = Some(f);
                }
            }
        }
        let (failure, stderr) =
            failure.unwrap_or((ConnectFailure::Timeout { timeout_ms: 0 }, Vec::new()));
        let error = if reconnecting {
            ClientError::UnavailableAfterReconnect {
                server: inner.name.clone(),
                cause: Arc::new(failure),
                stderr,
            }
        } else {
            ClientError::Connect {
                server: inner.name.clone(),
                failure,
                stderr,
            }
        };
        if reconnecting && lifecycle.last_failure.is_none() {
            // Connected → unavailable: tell observers, so a host can drop the
            // server's tools from its next toolset (RFC diagram 6).
            inner.signals.bump(extpool_core::ChangeKind::ToolsChanged);
        }
        lifecycle.last_failure = Some((broken, error.clone()));
        inner.attempts_done.fetch_add(1, Ordering::AcqRel);
        Err(error)
    }
}
