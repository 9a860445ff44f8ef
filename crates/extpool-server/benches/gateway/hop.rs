//! The floor of a stdio hop: the least a gateway in front of a stdio
//! server can do on extpool's stack (axum on a multi-threaded tokio
//! runtime, `TCP_NODELAY`, one pipe to one child). Each POST's body is
//! written to the child as one line and answered with the child's line of
//! the same id, as `application/json`; `initialize` is answered here with
//! a fixed result and a session id, a notification with 202. No MCP logic
//! at all: no message checked or typed, no session, no view, no audit, no
//! metrics, and ids passed on as the client sent them (the load
//! generator's are unique; a gateway serving many clients renumbers
//! them). What a gateway costs above it is its own; what the floor costs
//! is what any gateway with a stdio hop costs here.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

/// The `initialize` result the floor gives every client.
const INITIALIZE: &str = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"hop-floor","version":"1"}}"#;

/// What the floor reads of a message: its id and method, nothing else.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
}

/// The calls waiting for their line, by id as JSON text (`None` once the
/// child's output ended: no line will come), and the lines to write to
/// the child.
struct Hop {
    waiting: Mutex<Option<HashMap<Box<str>, oneshot::Sender<Bytes>>>>,
    lines: mpsc::UnboundedSender<Bytes>,
}

/// The hop floor's child: the stdio server `program` `args` behind axum on
/// `port`. Never returns.
pub fn run(port: u16, program: &std::path::Path, args: &[String]) -> ! {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let mut child = Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting the stdio server");
        let mut stdin = child.stdin.take().expect("its stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("its stdout"));
        handshake(&mut stdin, &mut stdout).await;
        let (lines, rx) = mpsc::unbounded_channel();
        let hop = Arc::new(Hop {
            waiting: Mutex::new(Some(HashMap::new())),
            lines,
        });
        tokio::spawn(write_lines(stdin, rx));
        tokio::spawn(read_lines(stdout, hop.clone()));
        let app = axum::Router::new().fallback(move |body: Bytes| answer(hop.clone(), body));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("binding the hop floor's port");
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await.expect("serving the hop");
        drop(child);
    });
    std::process::exit(0)
}

/// The child's `initialize` and `notifications/initialized`.
async fn handshake(stdin: &mut ChildStdin, stdout: &mut BufReader<ChildStdout>) {
    const INIT: &str = concat!(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","#,
        r#""capabilities":{},"clientInfo":{"name":"hop-floor","version":"1"}}}"#,
        "\n"
    );
    stdin
        .write_all(INIT.as_bytes())
        .await
        .expect("writing initialize");
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout
            .read_line(&mut line)
            .await
            .expect("reading the child");
        assert!(n > 0, "the stdio server ended before its initialize answer");
        if line.contains("\"result\"") {
            break;
        }
    }
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .expect("writing initialized");
}

/// Writes every line queued, as many as are queued in one write.
async fn write_lines(mut stdin: ChildStdin, mut rx: mpsc::UnboundedReceiver<Bytes>) {
    let mut buf = Vec::with_capacity(64 * 1024);
    while let Some(first) = rx.recv().await {
        buf.clear();
        buf.extend_from_slice(&first);
        buf.push(b'\n');
        while let Ok(more) = rx.try_recv() {
            buf.extend_from_slice(&more);
            buf.push(b'\n');
        }
        if stdin.write_all(&buf).await.is_err() {
            return;
        }
    }
}

/// Hands each line of the child to the call waiting for its id; when
/// its output ends, fails the calls waiting and those to come (502).
async fn read_lines(mut stdout: BufReader<ChildStdout>, hop: Arc<Hop>) {
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match stdout.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => {
                hop.waiting.lock().take();
                return;
            }
            Ok(_) => {}
        }
        let Ok(head) = serde_json::from_slice::<Head>(&line) else {
            continue;
        };
        let Some(id) = head.id else { continue };
        let waiting = hop.waiting.lock().as_mut().and_then(|w| w.remove(id.get()));
        if let Some(waiting) = waiting {
            let _ = waiting.send(Bytes::copy_from_slice(line.trim_ascii_end()));
        }
    }
}

/// One POST: `initialize` answered here, a notification taken, anything
/// else sent to the child and answered with its line.
async fn answer(hop: Arc<Hop>, body: Bytes) -> Response {
    let Ok(head) = serde_json::from_slice::<Head>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = head.id else {
        return StatusCode::ACCEPTED.into_response();
    };
    if head.method.as_deref() == Some("initialize") {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{INITIALIZE}}}"#,
            id.get()
        );
        return json(Bytes::from(text), Some("hop"));
    }
    if body.contains(&b'\n') {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let (tx, rx) = oneshot::channel();
    match hop.waiting.lock().as_mut() {
        Some(waiting) => waiting.insert(id.get().into(), tx),
        None => return StatusCode::BAD_GATEWAY.into_response(),
    };
    if hop.lines.send(body).is_err() {
        return StatusCode::BAD_GATEWAY.into_response();
    }
    match rx.await {
        Ok(line) => json(line, None),
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}

/// `body` answered 200 as `application/json`, with `session` as its
/// `Mcp-Session-Id` when given.
fn json(body: Bytes, session: Option<&'static str>) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(id) = session {
        headers.insert("mcp-session-id", HeaderValue::from_static(id));
    }
    response
}
