//! A stand-in for ToolHive's API (`thv serve`), for tests of discovery.
//!
//! ToolHive runs MCP servers in containers and cannot run here, so this
//! serves its workloads list with the wire format of its OpenAPI document
//! (`docs/server/swagger.yaml` of stacklok/toolhive) and of its handler
//! (`pkg/api/v1/workloads.go`):
//!
//! - `GET /api/v1beta/workloads[?group=G][&all=true]` → `200`,
//!   `Content-Type: application/json`, `{"workloads":[…]}` (Go's encoder:
//!   a trailing newline; `null` for no workloads), each a `core.Workload`
//!   with every field Go writes (`omitempty` ones only when set);
//! - an unknown group → `404`, `text/plain; charset=utf-8`,
//!   `group not found: G` (Go's `http.Error`: `nosniff`, a newline);
//! - a failing runtime → `500` `Internal Server Error` (ToolHive never
//!   shows a 5xx's details), or any status a test asks for;
//! - `GET /health` → `204`.
//!
//! Tests switch it to answer an error or a body that is not JSON, change
//! the workloads, and wait for its next request instead of sleeping. It
//! runs on its own thread and runtime, so sync and async tests use it
//! alike; it stops when dropped.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use parking_lot::{Condvar, Mutex};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One workload as ToolHive lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Its name (the unique identifier).
    pub name: String,
    /// The URL of its proxy.
    pub url: String,
    /// `running`, `starting`, `stopped`, `unhealthy`, …
    pub status: String,
    /// Extra words about the status (`omitempty`).
    pub status_context: String,
    /// `stdio`, `sse`, `streamable-http`.
    pub transport_type: String,
    /// `streamable-http` or `sse` (`omitempty`).
    pub proxy_mode: String,
    /// Its group (`omitempty`).
    pub group: String,
}

impl Workload {
    /// A running stdio server behind a streamable-HTTP proxy at `url`, in
    /// group `default` (what `thv run` makes by default).
    pub fn running(name: &str, url: &str) -> Self {
        Self {
            name: name.to_owned(),
            url: url.to_owned(),
            status: "running".into(),
            status_context: String::new(),
            transport_type: "stdio".into(),
            proxy_mode: "streamable-http".into(),
            group: "default".into(),
        }
    }

    /// The same workload in `group`.
    pub fn in_group(mut self, group: &str) -> Self {
        self.group = group.to_owned();
        self
    }

    /// The same workload with another status.
    pub fn with_status(mut self, status: &str, context: &str) -> Self {
        self.status = status.to_owned();
        self.status_context = context.to_owned();
        self
    }

    /// The same workload proxied over SSE (ToolHive's URL then ends in
    /// `/sse#<name>`).
    pub fn over_sse(mut self) -> Self {
        self.proxy_mode = "sse".into();
        self
    }

    /// The JSON of `core.Workload`, field for field as Go encodes it.
    pub fn to_json(&self) -> Value {
        let port = self
            .url
            .rsplit_once(':')
            .and_then(|(_, rest)| rest.split('/').next())
            .and_then(|p| p.parse::<u16>().ok())
            .unwrap_or(0);
        let mut w = json!({
            "name": self.name,
            "package": format!("ghcr.io/example/{}:latest", self.name),
            "url": self.url,
            "port": port,
            "transport_type": self.transport_type,
            "status": self.status,
            "created_at": "2025-06-01T10:00:00.123456789Z",
            "labels": {"toolhive-example": "true"},
            "started_at": "2025-06-01T10:00:02Z",
        });
        let map = w.as_object_mut().expect("an object");
        if !self.proxy_mode.is_empty() {
            map.insert("proxy_mode".into(), json!(self.proxy_mode));
        }
        if !self.status_context.is_empty() {
            map.insert("status_context".into(), json!(self.status_context));
        }
        if !self.group.is_empty() {
            map.insert("group".into(), json!(self.group));
        }
        w
    }
}

/// How the stand-in answers the workloads list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The workloads (the normal case).
    Workloads,
    /// This status with Go's plain-text error body (500: `Internal Server
    /// Error`, as ToolHive hides a 5xx's details).
    Status(u16),
    /// `200` with a body that is not a workload list.
    Garbage,
}

struct Shared {
    workloads: Mutex<Vec<Workload>>,
    groups: Mutex<BTreeSet<String>>,
    answer: Mutex<Answer>,
    requests: Mutex<u64>,
    arrived: Condvar,
    queries: Mutex<Vec<Option<String>>>,
}

/// The stand-in ToolHive; stops when dropped.
pub struct FakeToolHive {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for FakeToolHive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeToolHive")
            .field("addr", &self.addr)
            .finish()
    }
}

impl FakeToolHive {
    /// Starts it on `127.0.0.1:0` with no workloads and the group `default`.
    pub fn start() -> Self {
        let shared = Arc::new(Shared {
            workloads: Mutex::new(Vec::new()),
            groups: Mutex::new(["default".to_owned()].into()),
            answer: Mutex::new(Answer::Workloads),
            requests: Mutex::new(0),
            arrived: Condvar::new(),
            queries: Mutex::new(Vec::new()),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("its address");
        let stop = CancellationToken::new();
        let app = axum::Router::new()
            .route("/api/v1beta/workloads", get(list))
            .route("/health", get(|| async { StatusCode::NO_CONTENT }))
            .with_state(shared.clone());
        let token = stop.clone();
        let thread = std::thread::Builder::new()
            .name("fake-toolhive".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                runtime.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(token.cancelled_owned())
                        .await;
                });
            })
            .expect("spawn the fake ToolHive");
        Self {
            addr,
            shared,
            stop,
            thread: Some(thread),
        }
    }

    /// Its base URL (what `--toolhive-url` takes).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the workloads (their groups become known groups).
    pub fn set_workloads(&self, workloads: Vec<Workload>) {
        let mut groups = self.shared.groups.lock();
        for w in &workloads {
            if !w.group.is_empty() {
                groups.insert(w.group.clone());
            }
        }
        *self.shared.workloads.lock() = workloads;
    }

    /// Makes `group` known (an empty group lists no workloads, not 404).
    pub fn add_group(&self, group: &str) {
        self.shared.groups.lock().insert(group.to_owned());
    }

    /// How the workloads list answers from now on.
    pub fn answer(&self, answer: Answer) {
        *self.shared.answer.lock() = answer;
    }

    /// Requests of the workloads list so far.
    pub fn requests(&self) -> u64 {
        *self.shared.requests.lock()
    }

    /// The `group` of each request so far (`None`: no filter).
    pub fn queries(&self) -> Vec<Option<String>> {
        self.shared.queries.lock().clone()
    }

    /// Blocks until the workloads list has been requested more than
    /// `seen` times (the next poll after a change), at most `patience`;
    /// returns the count. Panics when it never happens.
    pub fn wait_past(&self, seen: u64, patience: Duration) -> u64 {
        let mut n = self.shared.requests.lock();
        let deadline = std::time::Instant::now() + patience;
        while *n <= seen {
            if self.shared.arrived.wait_until(&mut n, deadline).timed_out() {
                panic!(
                    "ToolHive was not asked again within {patience:?} (asked {} times)",
                    *n
                );
            }
        }
        *n
    }

    /// [`FakeToolHive::wait_past`] for async tests (waits on a blocking
    /// thread, so the test's runtime keeps running).
    pub async fn wait_past_async(self: &Arc<Self>, seen: u64, patience: Duration) -> u64 {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.wait_past(seen, patience))
            .await
            .expect("the waiting thread")
    }
}

impl Drop for FakeToolHive {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[derive(serde::Deserialize)]
struct ListQuery {
    group: Option<String>,
    all: Option<String>,
}

/// Go's `http.Error`: plain text, `nosniff`, the message and a newline.
fn go_error(status: StatusCode, message: &str) -> Response {
    let mut response = (status, format!("{message}\n")).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

async fn list(State(shared): State<Arc<Shared>>, Query(q): Query<ListQuery>) -> Response {
    let response = answer(&shared, &q);
    shared.queries.lock().push(q.group.clone());
    let mut n = shared.requests.lock();
    *n += 1;
    shared.arrived.notify_all();
    response
}

fn answer(shared: &Shared, q: &ListQuery) -> Response {
    match shared.answer.lock().clone() {
        Answer::Status(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let text = if status.is_server_error() && !matches!(code, 502..=504) {
                status.canonical_reason().unwrap_or("error").to_owned()
            } else {
                format!("failed to list workloads: status {code}")
            };
            return go_error(status, &text);
        }
        Answer::Garbage => {
            return (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                "<html><body>502 Bad Gateway</body></html>",
            )
                .into_response();
        }
        Answer::Workloads => {}
    }
    let all = q.all.as_deref() == Some("true");
    if let Some(group) = &q.group
        && !shared.groups.lock().contains(group)
    {
        return go_error(StatusCode::NOT_FOUND, &format!("group not found: {group}"));
    }
    let listed: Vec<Value> = shared
        .workloads
        .lock()
        .iter()
        // Without `all=true` ToolHive lists the workloads whose container
        // runs, whatever their status says (`starting`, `unhealthy`,
        // `unauthenticated` are listed too).
        .filter(|w| all || !matches!(w.status.as_str(), "stopped" | "error" | "removing"))
        .filter(|w| q.group.as_ref().is_none_or(|g| &w.group == g))
        .map(Workload::to_json)
        .collect();
    let workloads = if listed.is_empty() {
        Value::Null
    } else {
        Value::Array(listed)
    };
    let body = format!("{}\n", json!({ "workloads": workloads }));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}
