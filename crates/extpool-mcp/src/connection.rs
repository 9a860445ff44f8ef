//! One connection attempt and one live connection: spawn or dial, then the
//! MCP `initialize` handshake, bounded by the startup timeout.
//!
//! A [`Connection`] is never repaired: when its transport is gone, the
//! client replaces it with a new one (new generation number) and closes the
//! old one in the background.

use std::sync::Arc;
use std::time::Duration;

use rmcp::Peer;
use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService,
};

use crate::client::ClientOptions;
use crate::config::{McpServerConfig, Protocol};
use crate::direct::{Direct, Era};
use crate::driver::Driver;
use crate::error::{ConfigError, ConnectFailure};
use crate::flood::{FloodGate, FloodStats, NotificationLimits};
use crate::handler::{ChangeSignals, Handler};
use crate::http::HttpPlan;
use crate::name::ServerName;
use crate::ordered::{Order, OrderedHandler, OrderedTransport};
use crate::progress::ProgressRoutes;
use crate::redact::Redactor;
use crate::stderr::StderrTail;
use crate::stdio::{ProcessGroup, StdioPlan};
use crate::transport::whole::Declared;

/// How a server is reached, checked once at construction.
#[derive(Debug, Clone)]
pub(crate) enum Plan {
    Stdio(StdioPlan),
    Http(HttpPlan),
}

impl Plan {
    pub(crate) fn new(
        name: &ServerName,
        config: &McpServerConfig,
        options: &ClientOptions,
    ) -> Result<Self, ConfigError> {
        if !config.enabled {
            return Err(ConfigError::Disabled {
                server: name.to_string(),
            });
        }
        match config.transport() {
            Ok(crate::config::Transport::Stdio { .. }) => {
                let plan = StdioPlan::new(name, config, &options.spawn)?;
                Ok(Self::Stdio(
                    plan.with_env(crate::via::VIA_ENV, &options.via.ancestry()),
                ))
            }
            Ok(crate::config::Transport::Http { .. }) if config.sandbox.is_some() => {
                Err(ConfigError::Sandbox {
                    server: name.to_string(),
                    reason: "sandbox: only a stdio server (`command`) can be confined; an HTTP server runs elsewhere".into(),
                })
            }
            Ok(crate::config::Transport::Http { .. }) => {
                let plan = HttpPlan::new(name, config, &options.tokens)?;
                Ok(Self::Http(plan.with_oauth(name, config, &options.auth)?))
            }
            Err(problem) => Err(ConfigError::Transport {
                server: name.to_string(),
                problem,
            }),
        }
    }
}

/// One live rmcp connection.
pub(crate) struct Connection {
    pub(crate) generation: u64,
    pub(crate) peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, OrderedHandler<Handler>>>>,
    stderr: Option<StderrTail>,
    pub(crate) pid: Option<u32>,
    /// The stdio child's process group (its pid: the child leads it).
    group: Option<ProcessGroup>,
    /// The task following a 2026-07-28 server's list changes.
    listener: Option<tokio::task::AbortHandle>,
    /// The capabilities the server declared, as it sent them (kept by the
    /// stdio transport; empty over HTTP, whose answers rmcp reads).
    pub(crate) declared: Declared,
    /// A stdio connection's tool calls past rmcp ([`crate::direct`]).
    pub(crate) direct: Option<Arc<Direct>>,
    /// The stdio connection's own thread, if it has one; last, so that it
    /// is told to finish after the service is.
    driver: parking_lot::Mutex<Option<Driver>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(listener) = &self.listener {
            listener.abort();
        }
        // Dropped without a close (pool or client dropped): rmcp closes the
        // child in the background; the rest of its group is killed here.
        if let Some(group) = self.group
            && self.service.get_mut().is_some()
        {
            group.kill();
        }
    }
}

impl Connection {
    /// True while requests sent on this connection can be answered: rmcp's
    /// service still takes them and, on a stdio connection, the server's
    /// output has not ended. rmcp keeps taking requests for a while after
    /// the output ended (it lets its handlers finish and closes the child
    /// first) though none of them can be answered any more.
    pub(crate) fn is_alive(&self) -> bool {
        !self.peer.is_transport_closed() && !self.direct.as_ref().is_some_and(|d| d.is_ended())
    }

    /// Resolves once the server's output has ended (a stdio connection):
    /// no request in flight on this connection will be answered. Never on
    /// an HTTP connection, whose requests rmcp fails itself.
    pub(crate) async fn ended(&self) {
        match &self.direct {
            Some(direct) => direct.ended().await,
            None => std::future::pending().await,
        }
    }

    pub(crate) fn stderr_lines(&self) -> Vec<String> {
        self.stderr
            .as_ref()
            .map(StderrTail::lines)
            .unwrap_or_default()
    }

    /// Closes stdin / the HTTP session, waits (bounded) for the server to
    /// go, then terminates whatever is left of its process group.
    pub(crate) async fn close(&self, timeout: Duration) {
        if let Some(listener) = &self.listener {
            listener.abort();
        }
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            match service.close_with_timeout(timeout).await {
                Ok(Some(_)) => {}
                Ok(None) => tracing::warn!(
                    pid = ?self.pid,
                    "MCP server did not exit in time; killing its process group"
                ),
                Err(error) => tracing::warn!(%error, "MCP connection task failed while closing"),
            }
        }
        if let Some(group) = self.group {
            group.terminate(GROUP_GRACE).await;
        }
        let driver = self.driver.lock().take();
        if let Some(driver) = driver {
            driver.finish().await;
        }
    }
}

/// What one attempt needs.
pub(crate) struct Attempt<'a> {
    pub(crate) name: &'a ServerName,
    pub(crate) plan: &'a Plan,
    pub(crate) options: &'a ClientOptions,
    pub(crate) signals: &'a Arc<ChangeSignals>,
    pub(crate) progress: &'a Arc<ProgressRoutes>,
    /// The clients behind the calls in flight (sampling, elicitation, logs).
    pub(crate) callers: &'a Arc<crate::callers::Callers>,
    pub(crate) generation: u64,
    pub(crate) startup: Duration,
    /// Largest message accepted from the server.
    pub(crate) max_message_bytes: u64,
    /// Masks what the server was given in what it writes to stderr.
    pub(crate) redactor: &'a Redactor,
    /// Counts what the connection's flood gate let through.
    pub(crate) flood: &'a Arc<parking_lot::Mutex<FloodStats>>,
    /// The protocol era to speak.
    pub(crate) protocol: Protocol,
    /// The listed tools' header-promoted arguments (HTTP).
    pub(crate) params: &'a Arc<crate::param_headers::ParamHeaders>,
}

impl Attempt<'_> {
    /// The rmcp client handler of a connection of this attempt, and the
    /// order its transport shares with it.
    fn handler(&self) -> (OrderedHandler<Handler>, Arc<Order>) {
        let handler = Handler::new(
            self.name.clone(),
            self.signals.clone(),
            self.progress.clone(),
        )
        .with_elicitation(self.options.elicitation.clone())
        .with_relay(self.options.relay, self.callers.clone());
        let order = Arc::new(Order::default());
        (OrderedHandler::new(handler, order.clone()), order)
    }

    /// `transport` behind this connection's flood gate.
    fn gate<T>(&self, transport: T) -> FloodGate<T> {
        FloodGate::new(
            transport,
            self.name.clone(),
            self.options.notifications,
            self.flood.clone(),
        )
    }
}

/// How the handshake goes in `protocol`'s era.
fn lifecycle(protocol: Protocol) -> ClientLifecycleMode {
    match protocol {
        Protocol::Session => ClientLifecycleMode::Initialize,
        Protocol::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
        Protocol::Stateless => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    }
}

/// How long the rest of a process group gets between SIGTERM and SIGKILL.
const GROUP_GRACE: Duration = Duration::from_millis(200);

/// How long a failed child gets to finish writing its stderr.
const STDERR_SETTLE: Duration = Duration::from_millis(200);

/// The OAuth message of a failed HTTP handshake, if OAuth is why it failed.
fn oauth_failure(error: &rmcp::service::ClientInitializeError) -> Option<String> {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            crate::classify::oauth_reason(error.error.as_ref())
        }
        _ => None,
    }
}

type Service = RunningService<RoleClient, OrderedHandler<Handler>>;
type Failed = (ConnectFailure, Vec<String>);
/// A started stdio server: its service, its pid and its direct calls.
type Started = (Service, Option<u32>, Arc<Direct>);

/// What starting a stdio server needs, owned, so that it can run on the
/// connection's own thread.
struct StdioStart {
    name: ServerName,
    plan: StdioPlan,
    tail: StderrTail,
    handler: OrderedHandler<Handler>,
    order: Arc<Order>,
    limits: NotificationLimits,
    flood: Arc<parking_lot::Mutex<FloodStats>>,
    max_message_bytes: usize,
    startup: Duration,
    protocol: Protocol,
    /// Where the capabilities the server declares are kept as sent.
    declared: Declared,
}

impl StdioStart {
    /// Starts the server on a driver of its own when `wanted` and the
    /// caller's runtime has several workers (see [`crate::driver`]),
    /// otherwise here. A failed start leaves no driver behind.
    async fn on_driver(self, wanted: bool) -> Result<(Started, Option<Driver>), Failed> {
        if !(wanted && crate::driver::helps_here()) {
            return Ok((self.run().await?, None));
        }
        let command = self.plan.command.clone();
        let failure = |error: std::io::Error| {
            (
                ConnectFailure::Spawn {
                    command: command.clone(),
                    error: Arc::new(error),
                },
                Vec::new(),
            )
        };
        let driver = Driver::start(self.name.as_str()).await.map_err(failure)?;
        let outcome = match driver.run(self.run()).await {
            Ok(outcome) => outcome,
            Err(join) => Err(failure(std::io::Error::other(join))),
        };
        match outcome {
            Ok(started) => Ok((started, Some(driver))),
            Err(failed) => {
                // The child is killed and reaped on the driver before it ends.
                driver.finish().await;
                Err(failed)
            }
        }
    }

    /// Spawns the child and initializes, bounded by the startup timeout.
    async fn run(self) -> Result<Started, Failed> {
        let (transport, pid) = self.plan.spawn(&self.name, &self.tail).map_err(|source| {
            (
                ConnectFailure::Spawn {
                    command: self.plan.command.clone(),
                    error: Arc::new(source),
                },
                Vec::new(),
            )
        })?;
        let direct = Arc::new(Direct::new(transport.sender()));
        let transport = FloodGate::new(
            transport
                .with_max_message_bytes(self.max_message_bytes)
                .with_declared(self.declared.clone()),
            self.name.clone(),
            self.limits,
            self.flood,
        );
        let transport = OrderedTransport::new(transport, self.order).with_direct(direct.clone());
        let serving = self
            .handler
            .serve_with_lifecycle(transport, lifecycle(self.protocol));
        match tokio::time::timeout(self.startup, serving).await {
            Ok(Ok(service)) => Ok((service, pid, direct)),
            Ok(Err(source)) => {
                let lines = self.tail.settled_lines(STDERR_SETTLE).await;
                Err((
                    ConnectFailure::Initialize {
                        error: Arc::new(source),
                    },
                    lines,
                ))
            }
            // Dropping the transport kills the child and its group.
            Err(_) => Err((
                ConnectFailure::Timeout {
                    timeout_ms: self.startup.as_millis() as u64,
                },
                self.tail.lines(),
            )),
        }
    }
}

/// How long one of the pings that tell a stall may take before the server
/// is not judged (a stalled one takes the delayed ACK's ~40 ms).
const PING_PATIENCE: Duration = Duration::from_millis(500);

/// Dials an HTTP server and initializes, bounded by the startup timeout.
/// On a connection kept for reuse, a server that may stall on it is
/// dialled again with a connection per request and pinged there too, then
/// once more on the reused connection when that looks like a stall
/// ([`crate::stall::judge_reuse`] decides from all of them); one found to
/// stall keeps that second session, any other the first.
async fn dial(
    a: &Attempt<'_>,
    plan: &HttpPlan,
    handler: OrderedHandler<Handler>,
    order: Arc<Order>,
    declared: &Declared,
) -> Result<Service, Failed> {
    use crate::stall::{Reuse, judge_reuse};
    let name = a.name.as_str();
    if let Some(refused) = plan.refused_host() {
        return Err((ConnectFailure::Address { refused }, Vec::new()));
    }
    let rule = plan.address_rule();
    let reusing = a.options.http.keep_alive && !a.options.is_stalling(name);
    let service = dial_with(
        a,
        plan,
        (handler, order),
        &a.options.http_client_under(name, rule, false),
        declared,
    )
    .await?;
    if !reusing {
        return Ok(service);
    }
    let Some(reused) = ping_times(a, &service).await else {
        return Ok(service);
    };
    if judge_reuse(&reused, &[]) != Reuse::TryFresh {
        return Ok(service);
    }
    // The same server on a connection per request: only a stall on reuse
    // makes it answer faster there.
    let (handler, order) = a.handler();
    let Ok(fresh_service) = dial_with(
        a,
        plan,
        (handler, order),
        &a.options.http_client_under(name, rule, true),
        declared,
    )
    .await
    else {
        return Ok(service);
    };
    let fresh = ping_times(a, &fresh_service).await.unwrap_or_default();
    let mut reused = reused;
    if judge_reuse(&reused, &fresh) == Reuse::Stalls {
        // Once more on the reused connection, after the fresh pings: a
        // stall waits every time, a loaded machine's slowness does not
        // last through both batches.
        let again = ping_times(a, &service).await.unwrap_or_default();
        reused.extend(again);
    }
    if judge_reuse(&reused, &fresh) != Reuse::Stalls {
        let _ = fresh_service.cancel().await;
        return Ok(service);
    }
    tracing::info!(
        server = %name,
        reused_ms = ?reused.iter().map(|p| p.as_millis() as u64).collect::<Vec<_>>(),
        fresh_ms = ?fresh.iter().map(|p| p.as_millis() as u64).collect::<Vec<_>>(),
        "this server answers a reused connection only after extpool's delayed ACK (Nagle's algorithm on its side): it gets a connection per request from now on"
    );
    a.options.note_stalling(name);
    let _ = service.cancel().await;
    Ok(fresh_service)
}

/// The pings that can tell a stall ([`crate::stall::PingBatch`]), sent
/// one after another on `service`; `None` when one fails or takes longer
/// than [`PING_PATIENCE`] (such a server is not judged).
async fn ping_times(a: &Attempt<'_>, service: &Service) -> Option<Vec<Duration>> {
    let mut batch = crate::stall::PingBatch::default();
    while batch.wants_more() {
        let sent = std::time::Instant::now();
        let ping =
            service.send_request(rmcp::model::ClientRequest::PingRequest(Default::default()));
        match tokio::time::timeout(PING_PATIENCE.min(a.startup), ping).await {
            Ok(Ok(_)) => batch.record(sent, sent.elapsed()),
            _ => return None,
        }
    }
    Some(batch.into_judged())
}

/// Dials an HTTP server on `client` and initializes, bounded by the
/// startup timeout.
async fn dial_with(
    a: &Attempt<'_>,
    plan: &HttpPlan,
    (handler, order): (OrderedHandler<Handler>, Arc<Order>),
    client: &reqwest::Client,
    declared: &Declared,
) -> Result<Service, Failed> {
    let transport = OrderedTransport::new(
        a.gate(plan.transport(
            client,
            &a.options.http,
            a.max_message_bytes,
            (a.params.clone(), a.options.via.clone()),
            declared.clone(),
        )),
        order,
    );
    let serving = handler.serve_with_lifecycle(transport, lifecycle(a.protocol));
    match tokio::time::timeout(a.startup, serving).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(source)) => {
            let failure = match oauth_failure(&source) {
                Some(reason) => ConnectFailure::OAuth { reason },
                None => ConnectFailure::Initialize {
                    error: Arc::new(source),
                },
            };
            Err((failure, Vec::new()))
        }
        Err(_) => Err((
            ConnectFailure::Timeout {
                timeout_ms: a.startup.as_millis() as u64,
            },
            Vec::new(),
        )),
    }
}

/// Spawns or dials, then initializes. On failure, returns the child's last
/// stderr lines along with the reason.
pub(crate) async fn connect(
    a: Attempt<'_>,
) -> Result<Arc<Connection>, (ConnectFailure, Vec<String>)> {
    let (handler, order) = a.handler();
    let declared = Declared::default();
    let client = rmcp::Service::get_info(&handler);
    let (service, stderr, pid, driver, direct) = match a.plan {
        Plan::Stdio(plan) => {
            let tail =
                StderrTail::redacting(a.redactor.clone()).telling(a.options.stderr_lines.clone());
            let start = StdioStart {
                name: a.name.clone(),
                plan: plan.clone(),
                tail: tail.clone(),
                handler,
                order,
                limits: a.options.notifications,
                flood: a.flood.clone(),
                max_message_bytes: usize::try_from(a.max_message_bytes).unwrap_or(usize::MAX),
                startup: a.startup,
                protocol: a.protocol,
                declared: declared.clone(),
            };
            let ((service, pid, direct), driver) = start.on_driver(a.options.stdio_driver).await?;
            (service, Some(tail), pid, driver, Some(direct))
        }
        Plan::Http(plan) => {
            let service = dial(&a, plan, handler, order, &declared).await?;
            (service, None, None, None, None)
        }
    };
    let peer = service.peer().clone();
    if let (Some(direct), Some(info)) = (&direct, peer.peer_info())
        && !info.protocol_version.has_initialize()
    {
        direct.set_era(Era {
            protocol_version: info.protocol_version.clone(),
            client_info: client.client_info,
            client_capabilities: client.capabilities,
        });
    }
    // rmcp takes whatever version the server answers; one extpool does not
    // speak is a failed start (the connection is closed below).
    let unsupported = peer
        .peer_info()
        .map(|info| info.protocol_version.as_str().to_owned())
        .filter(|answered| !crate::versions::speaks(answered));
    // rmcp may serve stale cached lists after an error; a host must see the truth.
    peer.set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    let stateless = unsupported.is_none()
        && peer
            .peer_info()
            .is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28);
    let listener = stateless.then(|| {
        tokio::spawn(crate::listen::follow_changes(
            peer.clone(),
            a.name.clone(),
            a.signals.clone(),
        ))
        .abort_handle()
    });
    let connection = Connection {
        generation: a.generation,
        peer: peer.clone(),
        service: tokio::sync::Mutex::new(Some(service)),
        stderr,
        pid,
        group: pid.map(ProcessGroup),
        listener,
        driver: parking_lot::Mutex::new(driver),
        declared,
        direct,
    };
    if let Some(answered) = unsupported {
        connection.close(GROUP_GRACE).await;
        let answered = format!("{:?}", extpool_core::text::shown_name(&answered));
        return Err((
            ConnectFailure::UnsupportedVersion { answered },
            connection.stderr_lines(),
        ));
    }
    if let Some(info) = peer.peer_info() {
        tracing::info!(
            server = %a.name,
            generation = a.generation,
            protocol = %info.protocol_version,
            implementation = info.server_info.as_ref().map(|i| i.name.as_str()).unwrap_or(""),
            "MCP server connected"
        );
    }
    Ok(Arc::new(connection))
}
