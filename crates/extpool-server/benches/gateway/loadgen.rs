//! The load generator: raw HTTP/1.1 on hyper's client connections, one
//! current-thread runtime on a thread of its own, every request body built
//! before the clock starts. It opens one session-era MCP session
//! (`initialize`, `notifications/initialized`), or none for 2026-07-28
//! requests (each carries its `_meta` and the era's headers), and then
//! drives `tools/call` on N keep-alive connections, each with one call in
//! flight (a closed loop, as wrk does). Its own cost per call is printed beside every
//! figure (the thread's CPU time over the calls it made), and its ceiling
//! is the fixed-body server's row of the same run.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// The protocol version the load generator asks for (session era).
pub const PROTOCOL: &str = "2025-11-25";
/// The protocol version of its requests without a session.
pub const STATELESS_PROTOCOL: &str = "2026-07-28";
/// How many pre-built bodies each connection cycles through (distinct ids).
const RING: usize = 8;

/// An MCP endpoint and the session opened on it.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub path: String,
    /// `Mcp-Session-Id` the server gave, if any.
    pub session: Option<String>,
    /// The tool the calls name.
    pub tool: String,
    /// Requests of the 2026-07-28 era, without a session.
    pub stateless: bool,
}

/// One level's figures: latencies, wall time and the generator's CPU.
pub struct Run {
    pub latencies: Vec<Duration>,
    pub took: Duration,
    /// CPU time of the load generator's thread over the level.
    pub client_cpu: Duration,
    /// Answers that were not a successful result (counted, never hidden).
    pub failures: usize,
}

/// The CPU time this thread has used (`/proc/thread-self/schedstat`, ns).
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    Duration::from_nanos(ns)
}

/// A runtime of one thread, as a client that must cost little wants.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the load generator's runtime")
}

async fn connect(addr: SocketAddr) -> SendRequest<Full<Bytes>> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connecting to {addr}: {e}"));
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    let (sender, conn) = http1::handshake(TokioIo::new(tcp))
        .await
        .expect("HTTP/1.1 handshake");
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    sender
}

/// The headers of a request of `method` to `target` but `Host` (which
/// every client sets from the address): the media types, the era's
/// headers, and the session's id. One list, so that wrk (`gateway/wrk.rs`)
/// sends what the load generator sends.
pub fn headers<'a>(
    target: &'a Target,
    method: &'a str,
) -> impl Iterator<Item = (&'static str, &'a str)> {
    let era = if target.stateless {
        [
            Some(("mcp-protocol-version", STATELESS_PROTOCOL)),
            Some(("mcp-method", method)),
            (method == "tools/call").then_some(("mcp-name", target.tool.as_str())),
        ]
    } else {
        [Some(("mcp-protocol-version", PROTOCOL)), None, None]
    };
    [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ]
    .into_iter()
    .chain(era.into_iter().flatten())
    .chain(target.session.as_deref().map(|id| ("mcp-session-id", id)))
}

/// A POST of `body`, a request of `method` (`tools/call` names the
/// target's tool), with the headers of the target's era.
fn request(target: &Target, method: &str, body: Bytes) -> Request<Full<Bytes>> {
    let r =
        Request::post(target.path.as_str()).header(hyper::header::HOST, target.addr.to_string());
    headers(target, method)
        .fold(r, |r, (name, value)| r.header(name, value))
        .body(Full::new(body))
        .expect("a request")
}

/// The `_meta` every 2026-07-28 request carries.
fn stateless_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": STATELESS_PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "extpool-bench-loadgen", "version": "1"}})
}

/// The JSON-RPC message in an answer: the body itself, or the `data:` of
/// the SSE event that carries a result or an error.
fn message(body: &[u8]) -> Option<Value> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Some(v);
    }
    let text = std::str::from_utf8(body).ok()?;
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
}

/// A session-era `initialize` request.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "extpool-bench-loadgen", "version": "1"}}})
}

async fn post(
    sender: &mut SendRequest<Full<Bytes>>,
    target: &Target,
    body: Value,
) -> (StatusCode, hyper::HeaderMap, Bytes) {
    sender.ready().await.expect("connection ready");
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let response = sender
        .send_request(request(target, &method, Bytes::from(body.to_string())))
        .await
        .expect("an answer");
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.expect("the body").to_bytes();
    (parts.status, parts.headers, bytes)
}

/// Opens a session-era session on `addr` + `path` (none when `stateless`:
/// 2026-07-28 requests) and finds the tool whose name is `tool` or ends in
/// `__tool`; `fixed` skips both (a server that answers every request with
/// one body has neither).
pub fn open(addr: SocketAddr, path: &str, tool: &str, fixed: bool, stateless: bool) -> Target {
    let mut target = Target {
        addr,
        path: path.to_owned(),
        session: None,
        tool: tool.to_owned(),
        stateless,
    };
    if fixed {
        return target;
    }
    let rt = runtime();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let mut sender = connect(addr).await;
        let mut list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        if stateless {
            list["params"] = json!({"_meta": stateless_meta()});
        } else {
            let (status, headers, body) = post(&mut sender, &target, initialize()).await;
            assert!(status.is_success(), "initialize: {status} {body:?}");
            target.session = headers
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let (status, _, body) = post(&mut sender, &target, initialized).await;
            assert!(status.is_success(), "initialized: {status} {body:?}");
        }
        let (_, _, body) = post(&mut sender, &target, list).await;
        let list = message(&body).unwrap_or_else(|| panic!("tools/list: {body:?}"));
        let suffix = format!("__{tool}");
        target.tool = list["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .find(|n| *n == tool || n.ends_with(&suffix))
            .unwrap_or_else(|| panic!("no {tool} tool in {list}"))
            .to_owned();
    });
    target
}

/// The body of a `tools/call` of the target's tool with id `id` (its
/// `_meta` too for 2026-07-28 requests): what every call sends.
pub fn call_body(target: &Target, id: u64) -> String {
    let mut params = json!({"name": target.tool, "arguments": {"message": "ping"}});
    if target.stateless {
        params["_meta"] = stateless_meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// The bodies connection `c` of `conns` cycles through: ids `c + conns·j`,
/// so no two calls in flight share an id.
fn bodies(target: &Target, c: usize, conns: usize) -> Vec<Bytes> {
    (0..RING)
        .map(|j| Bytes::from(call_body(target, (100 + c + conns * j) as u64)))
        .collect()
}

/// What a successful `tools/call` answer holds (SSE or JSON alike).
pub const RESULT_MARK: &str = "\"result\"";
/// What a `tools/call` answer that is a tool's error holds.
pub const TOOL_ERROR_MARK: &str = "\"isError\":true";

/// Whether an answer is a successful `tools/call` result: HTTP 200, a
/// result, not a tool's error. A plain search of the bytes: cheap beside
/// the call, and it reads SSE and JSON alike. wrk's script checks the
/// same marks (`gateway/wrk.rs`).
fn succeeded(status: StatusCode, body: &[u8]) -> bool {
    let has = |needle: &str| body.windows(needle.len()).any(|w| w == needle.as_bytes());
    status == StatusCode::OK && has(RESULT_MARK) && !has(TOOL_ERROR_MARK)
}

async fn connection(
    sender: &mut SendRequest<Full<Bytes>>,
    target: &Target,
    ring: &[Bytes],
    deadline: Instant,
) -> (Vec<Duration>, usize) {
    let mut latencies = Vec::with_capacity(4096);
    let mut failures = 0;
    let mut i = 0;
    while Instant::now() < deadline {
        let req = request(target, "tools/call", ring[i % RING].clone());
        i += 1;
        let t = Instant::now();
        if sender.ready().await.is_err() {
            failures += 1;
            *sender = connect(target.addr).await;
            continue;
        }
        let ok = match sender.send_request(req).await {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                match body.collect().await {
                    Ok(b) => succeeded(parts.status, &b.to_bytes()),
                    Err(_) => false,
                }
            }
            Err(_) => false,
        };
        latencies.push(t.elapsed());
        if !ok {
            failures += 1;
        }
    }
    (latencies, failures)
}

/// Drives `conns` keep-alive connections for `warmup` unmeasured, then for
/// `length`; runs on a thread of its own so its CPU time is its alone.
pub fn run(target: &Target, conns: usize, warmup: Duration, length: Duration) -> Run {
    let target = target.clone();
    std::thread::spawn(move || {
        let rt = runtime();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let mut senders = Vec::with_capacity(conns);
            for _ in 0..conns {
                senders.push(connect(target.addr).await);
            }
            let rings: Vec<Vec<Bytes>> = (0..conns).map(|c| bodies(&target, c, conns)).collect();
            let mut level = async |deadline| {
                let calls = senders
                    .iter_mut()
                    .zip(&rings)
                    .map(|(s, ring)| connection(s, &target, ring, deadline));
                futures::future::join_all(calls).await
            };
            level(Instant::now() + warmup).await;
            let cpu = thread_cpu();
            let start = Instant::now();
            let all = level(start + length).await;
            let took = start.elapsed();
            let client_cpu = thread_cpu().saturating_sub(cpu);
            let failures = all.iter().map(|(_, f)| f).sum();
            let latencies = all.into_iter().flat_map(|(l, _)| l).collect();
            Run {
                latencies,
                took,
                client_cpu,
                failures,
            }
        })
    })
    .join()
    .expect("the load generator's thread")
}

/// Opens `n` session-era sessions (`initialize`, then
/// `notifications/initialized`) over `conns` keep-alive connections and
/// leaves them open, idle; returns how many the server opened.
pub fn open_sessions(addr: SocketAddr, path: &str, n: usize, conns: usize) -> usize {
    let path = path.to_owned();
    std::thread::spawn(move || {
        let rt = runtime();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let next = std::cell::Cell::new(0usize);
            let opened = std::cell::Cell::new(0usize);
            let one = |_| async {
                let mut sender = connect(addr).await;
                while next.get() < n {
                    next.set(next.get() + 1);
                    let mut target = Target {
                        addr,
                        path: path.clone(),
                        session: None,
                        tool: String::new(),
                        stateless: false,
                    };
                    let (status, headers, _) = post(&mut sender, &target, initialize()).await;
                    target.session = headers
                        .get("mcp-session-id")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    if !status.is_success() || target.session.is_none() {
                        continue;
                    }
                    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
                    let (status, _, _) = post(&mut sender, &target, note).await;
                    if status.is_success() {
                        opened.set(opened.get() + 1);
                    }
                }
            };
            futures::future::join_all((0..conns).map(one)).await;
            opened.get()
        })
    })
    .join()
    .expect("the session opener's thread")
}
