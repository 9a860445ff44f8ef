//! Serving [`TestServer`] over streamable HTTP at `/mcp` with axum.
//!
//! Legacy sessions (`Mcp-Session-Id`) are on, loopback `Host` headers are
//! allowed, and accepted sockets get `TCP_NODELAY` (without it a pooled
//! client stalls ~40 ms per call on delayed ACKs). With a bearer token set,
//! every request without `Authorization: Bearer <token>` gets 401; the token
//! itself is never logged. A `tools/call` of the `http_status` tool is
//! answered by this layer with the HTTP status it names. With a state
//! directory, every POST is recorded in its request log (the JSON-RPC
//! method, the `mcp-*` and trace-context headers, a digest of `Authorization`), so tests can
//! see what a client really sent.

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::{Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    serve::ListenerExt,
};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::TestServer;

/// Path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// How long an idle legacy session is kept; long, so a test that waits for a
/// notification never loses its session.
const SESSION_KEEP_ALIVE: Duration = Duration::from_secs(3600);

/// The token every request must carry (`--require-bearer`).
#[derive(Clone)]
struct Bearer(Arc<str>);

async fn check_bearer(State(bearer): State<Bearer>, request: Request, next: Next) -> Response {
    let expected = format!("Bearer {}", bearer.0);
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if presented == Some(expected.as_str()) {
        return next.run(request).await;
    }
    tracing::info!(
        with_header = presented.is_some(),
        "refused a request without the expected bearer token"
    );
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "missing or wrong bearer token",
    )
        .into_response()
}

/// Largest request body the fault-injection layer buffers.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// The status a `tools/call` of `http_status` asks for, if `body` is one.
fn requested_status(body: &[u8]) -> Option<StatusCode> {
    const NEEDLE: &[u8] = b"http_status";
    // Cheap filter first: almost no request mentions the tool.
    if !body.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
        return None;
    }
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    if message.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    let params = message.get("params")?;
    if params.get("name")?.as_str()? != "http_status" {
        return None;
    }
    let code = params.get("arguments")?.get("code")?.as_u64()?;
    StatusCode::from_u16(u16::try_from(code).ok()?).ok()
}

/// What the request log keeps of one POST: its JSON-RPC method, its
/// `mcp-*` and trace-context headers, its `params._meta.traceparent`, and
/// the SHA-256 of its `Authorization` header (never the value).
fn request_record(headers: &axum::http::HeaderMap, body: &[u8]) -> serde_json::Value {
    use sha2::Digest;
    let message = serde_json::from_slice::<serde_json::Value>(body).ok();
    let method = message
        .as_ref()
        .and_then(|m| m.get("method").and_then(|m| m.as_str()).map(str::to_owned));
    let meta_traceparent = message
        .as_ref()
        .and_then(|m| m.pointer("/params/_meta/traceparent").cloned());
    let mcp: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .filter(|(name, _)| {
            let name = name.as_str();
            name.starts_with("mcp-") || name == "traceparent" || name == "tracestate"
        })
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), serde_json::Value::String(value))
        })
        .collect();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|v| hex::encode(sha2::Sha256::digest(v.as_bytes())));
    serde_json::json!({
        "method": method,
        "headers": mcp,
        "authorization_sha256": authorization,
        "meta_traceparent": meta_traceparent,
    })
}

/// Records every POST in the request log (with a state directory), and
/// answers a `tools/call` of `http_status {code}` with HTTP status `code`
/// (after counting it), so clients can be tested against HTTP-level
/// failures (400, 404, 429, 502, 503, 504, …) on a live session.
async fn inject_status(State(server): State<TestServer>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::debug!("reading a request body: {e}");
            return StatusCode::PAYLOAD_TOO_LARGE.into_response();
        }
    };
    if let Some(dir) = server.counters().dir()
        && let Err(e) = crate::state::append_request(dir, &request_record(&parts.headers, &bytes))
    {
        tracing::warn!("recording a request: {e}");
    }
    if let Some(status) = requested_status(&bytes) {
        if let Err(e) = server.counters().increment("http_status") {
            tracing::warn!("counting http_status: {e}");
        }
        tracing::info!(%status, "http_status: answering with an injected HTTP status");
        return (status, "injected by the http_status tool").into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The axum router serving `server` at [`MCP_PATH`]; every session shares
/// the same server state. `bearer`, when set, is required on every request.
pub fn router(server: TestServer, bearer: Option<String>, ct: &CancellationToken) -> Router {
    let fault_server = server.clone();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_KEEP_ALIVE);
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token());
    let extra = &server.options().allowed_hosts;
    if !extra.is_empty() {
        let hosts: Vec<String> = config.allowed_hosts.iter().chain(extra).cloned().collect();
        config = config.with_allowed_hosts(hosts);
    }
    let service = StreamableHttpService::new(
        move || Ok(server.for_new_session()),
        Arc::new(sessions),
        config,
    );
    let router = Router::new()
        .nest_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(fault_server, inject_status));
    match bearer {
        Some(token) => router.layer(middleware::from_fn_with_state(
            Bearer(token.into()),
            check_bearer,
        )),
        None => router,
    }
}

/// Serves `server` on `listener` until `ct` is cancelled. Accepted
/// connections get `TCP_NODELAY` unless `nagle` is set (what `axum::serve`
/// does by default: small response writes then wait for the client's
/// delayed ACK on a reused connection; for benchmarks of clients). Each
/// accepted connection increments counter `http_connections`.
pub async fn serve(
    listener: TcpListener,
    server: TestServer,
    bearer: Option<String>,
    ct: CancellationToken,
    nagle: bool,
) -> std::io::Result<()> {
    let counted = server.clone();
    let app = router(server, bearer, &ct);
    let listener = listener.tap_io(move |tcp| {
        let _ = counted.counters().increment("http_connections");
        if nagle {
            return;
        }
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("set_nodelay failed: {e}");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(ct.cancelled_owned())
        .await
}
