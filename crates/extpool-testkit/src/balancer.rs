//! A small HTTP load balancer in front of gateway replicas, for tests and
//! benchmarks: what nginx or HAProxy does in a deployment, reduced to
//! what a test needs to control and observe.
//!
//! Each request goes to one backend, chosen by the [`Policy`], as nginx
//! does with its defaults (`proxy_next_upstream error`, `max_fails=1`,
//! `fail_timeout=10s`): a backend that refuses the connection is skipped
//! for the next, and so is one that fails after taking the request when
//! the method is idempotent (a POST it may have run is answered 502, not
//! sent twice); a backend that failed either way is passed over for
//! [`FAIL_TIMEOUT`], so a dying replica, whose socket still takes
//! connections for a moment after it stopped answering, gets no more
//! requests. Responses stream through (SSE included); a backend that dies
//! mid-response cuts the client's response, as a real balancer does. The
//! request body is read whole (at most 16 MiB). [`Balancer::served`]
//! counts the requests each backend answered.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use futures::TryStreamExt;
use tokio_util::sync::CancellationToken;

/// Largest request body forwarded.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// How long a backend that failed a request is passed over (nginx's
/// `fail_timeout` default).
pub const FAIL_TIMEOUT: Duration = Duration::from_secs(10);

/// How a backend is chosen for each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Each request to the next backend in turn.
    RoundRobin,
    /// Every request to the first backend that accepts the connection
    /// (the others are standbys). Each request opens a connection of its
    /// own, so a backend that died is found when it refuses one: an idle
    /// connection kept to it could still look open to a loaded balancer,
    /// and the request sent on it would fail instead of moving on.
    Failover,
}

struct Inner {
    backends: Vec<String>,
    policy: Policy,
    next: AtomicUsize,
    served: Vec<AtomicU64>,
    /// When each backend last failed a request.
    failed: Vec<Mutex<Option<Instant>>>,
    client: reqwest::Client,
}

impl Inner {
    /// The backends to try for one request, in order: from `first` on,
    /// those that failed within [`FAIL_TIMEOUT`] last (tried only when
    /// no other takes the request).
    fn order(&self, first: usize) -> Vec<usize> {
        let n = self.backends.len();
        let (mut live, failed): (Vec<usize>, Vec<usize>) =
            (0..n).map(|k| (first + k) % n).partition(|&i| {
                let failed = *self.failed[i].lock().unwrap_or_else(|e| e.into_inner());
                failed.is_none_or(|at| at.elapsed() >= FAIL_TIMEOUT)
            });
        live.extend(failed);
        live
    }

    /// Notes that backend `i` failed a request now.
    fn fail(&self, i: usize) {
        *self.failed[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }
}

/// Whether a request with `method` may be sent to a second backend after
/// the first failed on it (nginx passes POST, LOCK and PATCH on to no
/// other backend once sent: the first may have acted on them).
fn idempotent(method: &axum::http::Method) -> bool {
    !matches!(method.as_str(), "POST" | "LOCK" | "PATCH")
}

/// A running balancer on `127.0.0.1`, stopped when dropped.
pub struct Balancer {
    addr: SocketAddr,
    inner: Arc<Inner>,
    stop: CancellationToken,
}

impl Balancer {
    /// Starts a balancer over `backends` (base URLs such as
    /// `http://127.0.0.1:8520`) on an ephemeral port.
    ///
    /// # Panics
    ///
    /// When no port can be bound or `backends` is empty.
    pub async fn start<I, S>(backends: I, policy: Policy) -> Balancer
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let backends: Vec<String> = backends
            .into_iter()
            .map(|b| b.into().trim_end_matches('/').to_owned())
            .collect();
        assert!(!backends.is_empty(), "a balancer needs a backend");
        let idle_per_backend = match policy {
            Policy::RoundRobin => usize::MAX,
            Policy::Failover => 0,
        };
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(idle_per_backend)
            .build()
            .expect("an HTTP client");
        let inner = Arc::new(Inner {
            served: backends.iter().map(|_| AtomicU64::new(0)).collect(),
            failed: backends.iter().map(|_| Mutex::new(None)).collect(),
            backends,
            policy,
            next: AtomicUsize::new(0),
            client,
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the balancer");
        let addr = listener.local_addr().expect("balancer address");
        let stop = CancellationToken::new();
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(inner.clone());
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let until = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(until)
                .await;
        });
        Balancer { addr, inner, stop }
    }

    /// The balancer's base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many requests each backend answered, in the order given.
    pub fn served(&self) -> Vec<u64> {
        self.inner
            .served
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Headers that belong to one connection, never forwarded.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "upgrade"
            | "te"
            | "trailer"
            | "host"
            | "content-length"
    )
}

fn copy_headers(from: &HeaderMap) -> HeaderMap {
    let mut to = HeaderMap::new();
    for (name, value) in from {
        if !hop_by_hop(name) {
            to.append(name.clone(), value.clone());
        }
    }
    to
}

async fn forward(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => return (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()).into_response(),
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let n = inner.backends.len();
    let first = match inner.policy {
        Policy::RoundRobin => inner.next.fetch_add(1, Ordering::Relaxed) % n,
        Policy::Failover => 0,
    };
    let mut failures = Vec::new();
    for i in inner.order(first) {
        let sent = inner
            .client
            .request(parts.method.clone(), format!("{}{path}", inner.backends[i]))
            .headers(copy_headers(&parts.headers))
            .body(body.clone())
            .send()
            .await;
        match sent {
            Ok(upstream) => {
                inner.served[i].fetch_add(1, Ordering::Relaxed);
                let mut response = Response::builder().status(upstream.status());
                if let Some(headers) = response.headers_mut() {
                    *headers = copy_headers(upstream.headers());
                }
                let stream = upstream.bytes_stream().map_err(std::io::Error::other);
                return response
                    .body(Body::from_stream(stream))
                    .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response());
            }
            Err(e) if e.is_connect() || idempotent(&parts.method) => {
                inner.fail(i);
                failures.push(format!("{}: {e}", inner.backends[i]));
            }
            Err(e) => {
                inner.fail(i);
                return (
                    StatusCode::BAD_GATEWAY,
                    [(header::CONTENT_TYPE, "text/plain")],
                    format!("balancer: {}: {e}", inner.backends[i]),
                )
                    .into_response();
            }
        }
    }
    (
        StatusCode::BAD_GATEWAY,
        [(header::CONTENT_TYPE, "text/plain")],
        format!(
            "balancer: no backend took the request ({})",
            failures.join("; ")
        ),
    )
        .into_response()
}
