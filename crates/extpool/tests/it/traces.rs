//! Traces over OTLP: `extpool serve --otlp-endpoint` sends a span per MCP
//! request and a child span per upstream call to a real OTLP/HTTP receiver
//! started here (its protobuf messages decoded with the OpenTelemetry
//! definitions), joined to the trace the client started, passed on to the
//! HTTP upstream, and never holding an argument value; with the receiver
//! down, calls go on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use extpool_testkit::{HttpServer, StateDir};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind};
use prost::Message;
use serde_json::{Value, json};

use crate::serve::Served;
use crate::support::Sandbox;

/// The longest a step waits for its spans; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(60);
/// The client's trace, and its span the gateway's request span is a child of.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
/// The trace a client sends in `_meta` instead of a header.
const META_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
/// An argument value no span may hold.
const ARGUMENT: &str = "argument-value-7f3a";

/// An OTLP/HTTP trace receiver on 127.0.0.1: every span it was sent.
struct Receiver {
    url: String,
    spans: Arc<Mutex<Vec<Span>>>,
    arrived: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::start_on(listener)
    }

    fn start_on(listener: tokio::net::TcpListener) -> Receiver {
        let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
        let arrived = Arc::new(tokio::sync::Notify::new());
        let (kept, notify) = (spans.clone(), arrived.clone());
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: Bytes| {
                let (kept, notify) = (kept.clone(), notify.clone());
                async move {
                    let request = ExportTraceServiceRequest::decode(body)
                        .expect("an OTLP ExportTraceServiceRequest");
                    let mut kept = kept.lock().unwrap();
                    for resource in request.resource_spans {
                        for scope in resource.scope_spans {
                            kept.extend(scope.spans);
                        }
                    }
                    notify.notify_waiters();
                    // An empty ExportTraceServiceResponse.
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
                        Vec::<u8>::new(),
                    )
                }
            }),
        );
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver {
            url,
            spans,
            arrived,
            task,
        }
    }

    /// Waits until `found` picks something out of the spans received.
    async fn until<T>(&self, what: &str, found: impl Fn(&[Span]) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let notified = self.arrived.notified();
            if let Some(value) = found(&self.spans.lock().unwrap()) {
                return value;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!(
                    "no {what} among the spans received: {:#?}",
                    self.spans.lock().unwrap()
                );
            }
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An id as the W3C trace context writes it.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The gateway's span of a request in `trace` and the upstream-call span
/// under it, once both arrived.
fn request_and_call(spans: &[Span], trace: &str) -> Option<(Span, Span)> {
    let request = spans
        .iter()
        .find(|s| hex(&s.trace_id) == trace && s.kind == SpanKind::Server as i32)?;
    let call = spans
        .iter()
        .find(|s| s.parent_span_id == request.span_id && s.kind == SpanKind::Client as i32)?;
    Some((request.clone(), call.clone()))
}

/// The attribute `key` of `span` as text.
fn attribute(span: &Span, key: &str) -> Option<String> {
    let value = span
        .attributes
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()?;
    Some(match value {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::BoolValue(b) => b.to_string(),
        other => format!("{other:?}"),
    })
}

/// `extpool serve` with one HTTP upstream (`up`), exporting to `otlp`.
fn serve(sb: &Sandbox, upstream: &HttpServer, otlp: &str) -> Served {
    Served::spawn(serve_command(sb, upstream, otlp))
}

/// The command line of [`serve`].
fn serve_command(sb: &Sandbox, upstream: &HttpServer, otlp: &str) -> std::process::Command {
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  up:\n    url: {}\nskills:\n  default_roots: false\n",
            upstream.url()
        ),
    );
    let mut command = sb.command();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--otlp-endpoint", otlp])
        // Export every 50 ms, so the test waits on spans, not on the timer.
        .env("OTEL_BSP_SCHEDULE_DELAY", "50");
    command
}

/// A session-era MCP session with the gateway, over plain HTTP.
struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
}

impl Session {
    async fn open(url: &str) -> Session {
        let http = reqwest::Client::new();
        let response = Self::post(
            &http,
            url,
            None,
            &[],
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "traces-test", "version": "1"}}}),
        )
        .await;
        let id = response
            .headers()
            .get("mcp-session-id")
            .expect("a session id")
            .to_str()
            .unwrap()
            .to_owned();
        response.text().await.unwrap();
        let session = Session {
            http,
            url: url.to_owned(),
            id,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        session.send(&[], initialized).await;
        session
    }

    async fn post(
        http: &reqwest::Client,
        url: &str,
        session: Option<&str>,
        headers: &[(&str, &str)],
        body: Value,
    ) -> reqwest::Response {
        let mut request = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        assert!(response.status().is_success(), "{response:?}");
        response
    }

    /// Sends `body` with `headers`; the answer's text.
    async fn send(&self, headers: &[(&str, &str)], body: Value) -> String {
        Self::post(&self.http, &self.url, Some(&self.id), headers, body)
            .await
            .text()
            .await
            .unwrap()
    }

    async fn echo(&self, id: u32, headers: &[(&str, &str)], meta: Option<Value>) -> String {
        let mut params = json!({"name": "mcp__up__echo", "arguments": {"message": ARGUMENT}});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        self.send(headers, body).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_a_gateway_span_with_a_child_per_upstream_call_in_the_clients_trace() {
    let receiver = Receiver::start().await;
    let kit = StateDir::new();
    let upstream = HttpServer::spawn(kit.args());
    let sb = Sandbox::new();
    let served = serve(&sb, &upstream, &receiver.url);
    let session = Session::open(&served.url).await;

    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let answer = session
        .echo(1, &[("traceparent", traceparent.as_str())], None)
        .await;
    assert!(answer.contains(ARGUMENT), "{answer}");

    let (request, call) = receiver
        .until("gateway span with its upstream child", |spans| {
            request_and_call(spans, TRACE)
        })
        .await;
    assert_eq!(hex(&request.parent_span_id), PARENT, "the client's span");
    assert_eq!(request.name, "tools/call mcp__up__echo");
    assert_eq!(
        attribute(&request, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(
        attribute(&request, "gen_ai.tool.name").as_deref(),
        Some("mcp__up__echo")
    );
    assert_eq!(
        attribute(&request, "mcp.session.id").as_deref(),
        Some(session.id.as_str())
    );
    assert_eq!(
        attribute(&request, "jsonrpc.request.id").as_deref(),
        Some("1")
    );
    assert_eq!(hex(&call.trace_id), TRACE);
    assert_eq!(call.name, "tools/call echo");
    assert_eq!(
        attribute(&call, "gen_ai.tool.name").as_deref(),
        Some("echo")
    );
    assert_eq!(attribute(&call, "mcp.server.name").as_deref(), Some("up"));

    // The upstream got the trace, with the gateway's upstream span as parent.
    let sent = format!("00-{TRACE}-{}-01", hex(&call.span_id));
    let calls: Vec<Value> = kit
        .requests()
        .into_iter()
        .filter(|r| r["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["headers"]["traceparent"], sent.as_str());
    assert_eq!(calls[0]["meta_traceparent"], sent.as_str());

    // A trace context in `_meta` (the MCP semantic conventions' carrier).
    let meta = json!({"traceparent": format!("00-{META_TRACE}-{PARENT}-01")});
    let answer = session.echo(2, &[], Some(meta)).await;
    assert!(answer.contains(ARGUMENT), "{answer}");
    receiver
        .until("span of the trace sent in _meta", |spans| {
            spans
                .iter()
                .find(|s| {
                    hex(&s.trace_id) == META_TRACE
                        && s.kind == SpanKind::Server as i32
                        && hex(&s.parent_span_id) == PARENT
                })
                .map(|_| ())
        })
        .await;

    // A 2026-07-28 request (answered by rmcp's service, in another task):
    // its upstream call is still a child of its request's span.
    let modern_trace = "5b8aa5a2d2c872e8321cf37308d69df2";
    let answer = modern_echo(&served.url, &format!("00-{modern_trace}-{PARENT}-01")).await;
    assert!(answer.contains(ARGUMENT), "{answer}");
    receiver
        .until("2026-07-28 request span with its upstream child", |spans| {
            request_and_call(spans, modern_trace)
        })
        .await;

    for span in receiver.spans.lock().unwrap().iter() {
        for kv in &span.attributes {
            let shown = format!("{:?}", kv.value);
            assert!(
                !shown.contains(ARGUMENT),
                "span {:?} holds an argument value in {}: {shown}",
                span.name,
                kv.key
            );
        }
    }
}

/// A 2026-07-28 `tools/call` of the echo with `traceparent`: the answer's text.
async fn modern_echo(url: &str, traceparent: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "mcp__up__echo",
        "arguments": {"message": ARGUMENT},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "traces-test", "version": "1"},
        },
    }});
    let response = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "mcp__up__echo")
        .header("traceparent", traceparent)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{response:?}");
    response.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_go_on_with_the_receiver_down() {
    // A port that was listening and is closed now: nothing answers there.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let kit = StateDir::new();
    let upstream = HttpServer::spawn(kit.args());
    let sb = Sandbox::new();
    let served = serve(&sb, &upstream, &closed);
    let session = Session::open(&served.url).await;
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    for id in 1..=20 {
        let answer = session
            .echo(id, &[("traceparent", traceparent.as_str())], None)
            .await;
        assert!(answer.contains(ARGUMENT), "call {id}: {answer}");
    }
}

/// While the collector refuses spans the gateway builds almost none (one
/// request a second); once it takes them again, traces flow again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_flow_again_once_the_collector_is_back() {
    use std::io::BufRead;
    // The collector, down: its port refuses connections (and stays ours).
    let port = extpool_testkit::ClosedPort::new();
    let addr = port.addr();
    let kit = StateDir::new();
    let upstream = HttpServer::spawn(kit.args());
    let sb = Sandbox::new();
    let mut command = serve_command(&sb, &upstream, &format!("http://{addr}"));
    command.arg("-v").stderr(std::process::Stdio::piped());
    let mut served = Served::spawn_with_stderr(command);
    let stderr = served.stderr.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let session = Session::open(&served.url).await;
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    // Calls until a batch of their spans was refused.
    let mut id = 0;
    let refused = "the trace collector refused a batch of spans";
    'refused: loop {
        id += 1;
        session
            .echo(id, &[("traceparent", traceparent.as_str())], None)
            .await;
        while let Ok(line) = lines.try_recv() {
            if line.contains(refused) {
                break 'refused;
            }
        }
        assert!(id < 10_000, "no batch was refused after {id} calls");
    }
    // The collector comes back on its address; calls go on until their
    // spans reach it.
    let receiver = Receiver::start_on(port.listen());
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        id += 1;
        session
            .echo(id, &[("traceparent", traceparent.as_str())], None)
            .await;
        let arrived = receiver
            .spans
            .lock()
            .unwrap()
            .iter()
            .any(|s| hex(&s.trace_id) == TRACE && s.kind == SpanKind::Server as i32);
        if arrived {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no span reached the collector once it was back ({id} calls)"
        );
    }
    let took_again = "the trace collector takes spans again";
    let deadline = std::time::Instant::now() + PATIENCE;
    while let Ok(line) =
        lines.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
    {
        if line.contains(took_again) {
            return;
        }
    }
    panic!("the gateway never said the collector was back");
}

/// Over `extpool serve --stdio` a tool call is its request's span (the
/// client's trace taken from its `_meta`), with the upstream call under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_stdio_is_a_gateway_span_in_the_clients_trace() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let receiver = Receiver::start().await;
    let sb = Sandbox::new();
    sb.testkit_config("skills:\n  default_roots: false\n");
    let mut command = tokio::process::Command::from(sb.command());
    command
        .args(["serve", "--stdio", "--toolhive=false", "--otlp-endpoint"])
        .arg(&receiver.url)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let stdio_trace = "7c3f54a8d0e64d1f9a2b3c4d5e6f7a8b";
    let messages = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "traces-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "mcp__testkit__echo", "arguments": {"message": ARGUMENT},
            "_meta": {"traceparent": format!("00-{stdio_trace}-{PARENT}-01")}}}),
    ];
    for message in messages {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    stdin.flush().await.unwrap();
    let answer = tokio::time::timeout(PATIENCE, async {
        loop {
            let line = lines.next_line().await.unwrap().expect("an answer");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == 1 {
                return message;
            }
        }
    })
    .await
    .expect("the call's answer");
    assert!(answer.to_string().contains(ARGUMENT), "{answer}");
    let (request, call) = receiver
        .until("stdio request span with its upstream child", |spans| {
            request_and_call(spans, stdio_trace)
        })
        .await;
    assert_eq!(hex(&request.parent_span_id), PARENT);
    assert_eq!(request.name, "tools/call mcp__testkit__echo");
    assert_eq!(
        attribute(&request, "network.transport").as_deref(),
        Some("pipe")
    );
    assert_eq!(call.name, "tools/call echo");
    drop(stdin);
    let _ = tokio::time::timeout(PATIENCE, child.wait()).await;
}

#[test]
fn an_otlp_endpoint_that_is_not_http_is_refused_before_serving() {
    let sb = Sandbox::new();
    for (endpoint, said) in [
        ("grpc://127.0.0.1:4317", "http:// or https://"),
        (
            "http://user:secret@127.0.0.1:4318",
            "must not carry credentials",
        ),
    ] {
        let run = sb.run(&["--otlp-endpoint", endpoint, "list", "tools"]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains(said), "{}", run.stderr);
        assert!(!run.stderr.contains("secret"), "{}", run.stderr);
    }
}
