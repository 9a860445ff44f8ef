//! The gateway over HTTP: `/mcp` (streamable HTTP, both protocol eras),
//! `/healthz` (the process answers), `/readyz` (the first catalog revision
//! is published and the state store answered the last heartbeat),
//! `/metrics` (Prometheus). With a bearer token set, `/mcp`
//! and `/metrics` require it; the health endpoints never do (load
//! balancers and Kubernetes probe them). `Host` is checked against
//! loopback names, the listen address and the configured hosts (DNS
//! rebinding); `Origin`, when a browser sends one, against the configured
//! origins and loopback.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use crate::gateway::{Gateway, GatewayError, Shared};

/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";

/// Whether `addr` can only be reached from this machine.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

async fn check_bearer(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let Some(token) = &shared.bearer else {
        return next.run(request).await;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if token.accepts(presented) {
        return next.run(request).await;
    }
    tracing::info!(
        with_header = presented.is_some(),
        path = %request.uri().path(),
        "refused a request without the gateway's bearer token"
    );
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "this extpool gateway requires its bearer token (Authorization: Bearer <token>)\n",
    )
        .into_response()
}

/// `/mcp` through [`crate::event_ids`]: event ids tagged with this replica.
async fn event_ids(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let max = shared.options.max_body_bytes;
    crate::event_ids::through(&shared.event_tag, request, max, |r| next.run(r)).await
}

/// Refuses a request whose declared body is larger than the gateway
/// accepts, at once (HTTP 413) with a message naming both sizes and the
/// setting. Plain text, like the MCP layer's own refusal: a JSON-RPC error
/// could not carry the request's id (the body is not read), and a client
/// waits forever for an answer it cannot match. A body sent without a
/// length is cut at the same size by the MCP layer.
async fn limit_body(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let max = shared.options.max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(size) if size > max as u64 => {
            tracing::info!(size, max, path = %request.uri().path(), "refused an oversized request");
            (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is {size} bytes; this extpool gateway accepts at most {max} (extpool serve --max-request-bytes)\n"
                ),
            )
                .into_response()
        }
        _ => next.run(request).await,
    }
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    let status = shared.host.status();
    if let Some(failure) = shared.replica_health.failure() {
        // Another replica can serve durable sessions; this one cannot.
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: the state store does not answer: {failure}\n"),
        )
            .into_response();
    }
    if status.is_ready() {
        (
            StatusCode::OK,
            format!("ready: catalog revision {}\n", status.catalog.revision),
        )
            .into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: no catalog revision published yet\n",
        )
            .into_response()
    }
}

async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        shared.metrics.render(&shared.host.status()),
    )
        .into_response()
}

impl Gateway {
    /// The router serving this gateway for a server listening on `addr`.
    pub fn router(&self, addr: SocketAddr) -> Router {
        let shared = self.shared.clone();
        let options = &shared.options;
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        hosts.push(addr.to_string());
        hosts.push(addr.ip().to_string());
        hosts.extend(options.allowed_hosts.iter().cloned());
        let mut origins: Vec<String> = vec![
            "http://localhost:*".into(),
            "http://127.0.0.1:*".into(),
            "http://[::1]:*".into(),
        ];
        origins.extend(options.allowed_origins.iter().cloned());
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(shared.stop.child_token())
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .with_max_request_body_bytes(options.max_body_bytes);
        let factory = {
            let gateway = self.clone();
            move || Ok(gateway.handler())
        };
        let mcp = StreamableHttpService::new(
            factory,
            shared.resume.manager(""),
            shared.resume.config(config.clone(), ""),
        );
        let api = crate::api::routes(crate::api::Api {
            shared: shared.clone(),
            config,
        });
        let mcp = Router::new()
            .nest_service(MCP_PATH, mcp)
            .layer(middleware::from_fn_with_state(shared.clone(), event_ids));
        let protected = Router::new()
            .merge(mcp)
            .route("/metrics", get(metrics))
            .with_state(shared.clone())
            .merge(api)
            .layer(middleware::from_fn_with_state(shared.clone(), limit_body))
            .layer(middleware::from_fn_with_state(shared.clone(), check_bearer));
        Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .with_state(shared)
            .merge(protected)
    }

    /// Serves HTTP on `listener` until [`Gateway::shutdown`] (or `stop`).
    /// A non-loopback address needs a bearer token.
    pub async fn serve_http(&self, listener: TcpListener) -> Result<(), GatewayError> {
        let addr = listener.local_addr().map_err(|source| GatewayError::Io {
            what: "reading the listen address".into(),
            source,
        })?;
        if !is_loopback(&addr) && self.shared.bearer.is_none() {
            return Err(GatewayError::NeedsToken { addr });
        }
        let app = self.router(addr);
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("set_nodelay failed: {e}");
            }
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(self.shared.stop.clone().cancelled_owned())
            .await
            .map_err(|source| GatewayError::Io {
                what: format!("serving HTTP on {addr}"),
                source,
            })
    }
}
