//! The [`Gateway`]: a started [`Host`] served to MCP clients. It builds
//! the hub every client session shares ([`crate::shared`]) and starts what
//! follows the host and the store; it is the top of the crate, so only
//! the front ends that serve a `Gateway` name it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use extpool_host::{Host, HostError, Naming, ViewPolicy};
use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::auth::BearerToken;
use crate::handler::GatewayHandler;
use crate::names::NamesCache;
use crate::notify::Notifier;
pub use crate::options::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CALLS_PER_SESSION, DEFAULT_MAX_PAGE_STREAMS,
    DEFAULT_MAX_REPLAY_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_PAGE_STREAM_BYTES,
    DEFAULT_SESSION_IDLE_TIMEOUT, DEFAULT_SESSIONS_PER_PRINCIPAL, DEFAULT_SHUTDOWN_TIMEOUT,
    GatewayOptions,
};
use crate::shared::{Access, Front, Ops, Shared};
use crate::subscriptions::Subscriptions;

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
            crate::held::resume::Resumable::new(sessions.as_ref().map(|s| s.store().clone()));
        let stop = CancellationToken::new();
        let live = Arc::new(crate::held::live::Live::new(
            options.max_sessions,
            options.sessions_per_principal,
            options.session_idle_timeout,
        ));
        let event_tag = crate::front::event_ids::replica_tag(replica.as_str());
        let kept_streams = crate::held::kept::KeptStreams::new(options.max_replay_bytes);
        let page =
            crate::held::page::PageState::new(options.max_page_streams, options.page_stream_bytes);
        let rounds = crate::input_rounds::Rounds::new(event_tag.clone());
        let front = Front::new(live, resume, kept_streams, event_tag, stop);
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
            logins: Arc::default(),
            callers: crate::held::callers::CallerViews::default(),
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
            replica_health: crate::held::store_health::StoreHealth::default(),
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
