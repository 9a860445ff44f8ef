//! The gateway's HTTP listener: hyper's HTTP/1 server on each accepted
//! connection, with every connection bounded.
//!
//! - **Connections**: at most `max_connections` at once. One more is
//!   answered `503` naming the limit and closed (a few such refusals at a
//!   time; past that it is closed at once), so a client that opens
//!   thousands holds at most that many file descriptors.
//! - **Headers and idle time**: a connection must send a whole request
//!   header within `header_read_timeout` of connecting and of the end of
//!   its last response (hyper's own timer: it runs whenever the
//!   connection waits for a request), else it is closed. A client that
//!   dribbles a header byte by byte, or connects and sends nothing, is
//!   closed within that time; a request in progress (a long call, an SSE
//!   stream) is never cut by it.
//! - **Bodies**: read within the gateway's body timeout where they are
//!   read ([`crate::inbound`]).
//!
//! Each request carries its connection's [`Arrival`], for the `Host`
//! rule, and its [`Cut`]: what closes the connection at once, for a
//! handler that must drop a client that does not read what it is sent
//! (the operator page's streams). On shutdown ([`crate::shutdown`]) the listener stops accepting
//! and closes its socket, so a new connection is refused; each open
//! connection closes once its response in flight is done (an idle one at
//! once), within the gateway's shutdown timeout, after which requests
//! still running are answered with the shutdown error and cancelled.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::guard::Arrival;
use crate::metrics::{Metrics, Refusal};
use crate::shutdown::Path;

/// Default most connections open at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Default time a connection has to send a whole request header, from
/// connecting or from the end of its last response.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections past the limit being told so at once; past this, closed.
const REFUSING: usize = 64;
/// How long a refused connection is given to read its answer.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// Closes the connection a request came on, at once, with whatever it
/// was writing: for a response its client does not read, which hyper then
/// no longer asks for more of, so nothing else would end it.
#[derive(Debug, Clone)]
pub(crate) struct Cut(pub(crate) CancellationToken);

/// The bounds of each connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` completes or the gateway's
/// shutdown begins otherwise, then follows the shutdown `path`.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    bounds: Bounds,
    metrics: Arc<Metrics>,
    path: Path,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(bounds.max_connections));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let tracker = TaskTracker::new();
    let mut failures = 0u32;
    let stop = path.draining.clone();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
            () = stop.cancelled() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(pair) => {
                failures = 0;
                pair
            }
            Err(e) => {
                // Out of file descriptors, or a connection reset before it
                // was accepted: wait a little (longer each time), go on.
                failures = failures.saturating_add(1);
                if failures == 1 || failures.is_power_of_two() {
                    tracing::warn!("cannot accept a connection ({e}); {failures} in a row");
                }
                let pause = Duration::from_millis(5 * u64::from(failures.min(200)));
                tokio::select! {
                    () = tokio::time::sleep(pause) => continue,
                    () = stop.cancelled() => break,
                }
            }
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("set_nodelay failed: {e}");
        }
        let Ok(permit) = open.clone().try_acquire_owned() else {
            metrics.refused(Refusal::Connections);
            if let Ok(permit) = refusing.clone().try_acquire_owned() {
                let max = bounds.max_connections;
                tracker.spawn(async move {
                    refuse(tcp, max).await;
                    drop(permit);
                });
            }
            continue;
        };
        let local = match tcp.local_addr() {
            Ok(local) => local,
            Err(e) => {
                tracing::debug!("a connection has no local address ({e}); closed");
                continue;
            }
        };
        let arrival = Arrival { local, peer };
        let app = app.clone();
        let stop = stop.clone();
        tracker.spawn(connection(tcp, arrival, app, bounds, stop, permit));
    }
    // Connections see the shutdown before the socket closes, so one
    // accepted meanwhile is refused rather than served.
    path.draining.cancel();
    drop(listener);
    tracker.close();
    path.wind_down("HTTP requests", tracker.wait()).await;
    Ok(())
}

/// Serves one connection until it closes, or the shutdown begins (`stop`:
/// then it closes once its response in flight is done).
/// Its `permit` is given back before the socket closes, so a client that
/// saw its connection close finds its place free.
async fn connection(
    tcp: TcpStream,
    arrival: Arrival,
    app: Router,
    bounds: Bounds,
    stop: CancellationToken,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let cut = CancellationToken::new();
    let cutter = Cut(cut.clone());
    let service = app.map_request(move |mut request: http::Request<Incoming>| {
        request.extensions_mut().insert(arrival);
        request.extensions_mut().insert(cutter.clone());
        request.map(axum::body::Body::new)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(bounds.header_read_timeout)
        .keep_alive(true);
    let conn = builder
        .serve_connection(TokioIo::new(tcp), TowerToHyperService::new(service))
        .with_upgrades();
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::trace!(peer = %arrival.peer, "connection ended: {e}");
                }
                drop(permit);
                return;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            () = cut.cancelled() => {
                tracing::debug!(peer = %arrival.peer, "connection cut");
                drop(permit);
                return;
            }
        }
    }
}

/// Tells a connection past the limit so, then closes it.
async fn refuse(mut tcp: TcpStream, max: usize) {
    let body = format!(
        "this extpool gateway has {max} connections open, its limit (extpool serve --max-connections); retry shortly\n"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let linger = async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await?;
        // Read what the client sent until it closes, so the answer is not
        // lost to a reset.
        let mut sink = [0u8; 4096];
        loop {
            let n = tokio::io::AsyncReadExt::read(&mut tcp, &mut sink).await?;
            if n == 0 {
                return Ok::<(), std::io::Error>(());
            }
        }
    };
    let _ = tokio::time::timeout(REFUSAL_LINGER, linger).await;
}

/// Raises this process's open-file limit to its hard limit (as servers
/// do at start), and returns the connections it leaves room for: `want`,
/// or fewer when the limit is lower than `want` plus `reserve` for the
/// servers, the store and the logs.
pub fn room_for_connections(want: usize, reserve: usize) -> usize {
    let limit = raise_open_files();
    match limit {
        Some(limit) if limit < want.saturating_add(reserve) => {
            let room = limit.saturating_sub(reserve).max(16);
            tracing::warn!(
                open_files = limit,
                "the open-file limit leaves room for {room} connections, not {want}; raise it (ulimit -n) or lower --max-connections"
            );
            room
        }
        _ => want,
    }
}

/// The open-file limit after raising the soft limit to the hard one.
fn raise_open_files() -> Option<usize> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let mut raised = limit;
    if let Some(hard) = limit.maximum
        && limit.current != Some(hard)
    {
        raised.current = Some(hard);
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!("cannot raise the open-file limit: {e}");
            raised = limit;
        }
    }
    raised
        .current
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}
