//! `extpool serve` stopped by a signal while calls are in flight: new
//! connections (or, over stdio, new requests) are refused at once, each
//! call gets an answer — its result when it finishes within
//! `--shutdown-timeout`, else the error saying the gateway shut down — the
//! session's open stream ends, the servers extpool started are gone, and
//! serve exits with 128 + the signal's number.
//!
//! Calls that finish within the bound are `barrier` calls on an upstream
//! the test started itself, released by the test's own call to it after
//! the signal; calls that never finish are `sleep` calls on a server
//! extpool started. Nothing waits on time: the servers' records, the
//! gateway's stderr line, the answers and pidfds.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use extpool_testkit::{HttpServer, StateDir, stdio_command};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::Sandbox;

/// Upper bound of any wait; reached only when broken.
const PATIENCE: Duration = Duration::from_secs(120);
/// The bound given to requests in flight.
const GRACE: &str = "5";
/// Calls of each kind in flight when the signal comes.
const EACH: usize = 16;
/// What the gateway says on stderr once it stopped taking work.
const STOPPING: &str = ": stopping: ";
/// The protocol version the raw clients speak.
const VERSION: &str = "2025-11-25";

/// A sandbox serving `slow` (a testkit server extpool starts, state in
/// `slow`) and `kit` (the testkit server at `kit_url`, started by the test).
fn sandbox(slow: &StateDir, kit_url: &str) -> Sandbox {
    let sb = Sandbox::new();
    let (program, args) = stdio_command(slow.args()).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    sb.write(
        "extpool.yaml",
        &format!(
            "mcp_servers:\n  slow:\n    command: {:?}\n    args: [{}]\n  kit:\n    url: {kit_url}\nskills:\n  default_roots: false\n",
            program.display().to_string(),
            args.join(", ")
        ),
    );
    sb
}

/// `extpool ARGS` in `sb`, its pipes taken, killed if the test fails.
fn spawn(sb: &Sandbox, args: &[&str]) -> Child {
    let mut command = Command::from(sb.command());
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command.spawn().unwrap()
}

/// The lines of `pipe`, as they come.
fn lines<R>(pipe: R) -> tokio::sync::mpsc::UnboundedReceiver<String>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(pipe).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            // As an inherited stderr would: the test's own.
            let _ = writeln!(std::io::stderr(), "{line}");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits for a line containing `text`.
async fn line_with(lines: &mut tokio::sync::mpsc::UnboundedReceiver<String>, text: &str) -> String {
    let found = async {
        while let Some(line) = lines.recv().await {
            if line.contains(text) {
                return line;
            }
        }
        panic!("the output ended before a line with {text:?}")
    };
    tokio::time::timeout(PATIENCE, found)
        .await
        .unwrap_or_else(|_| panic!("no line with {text:?}"))
}

fn send(child: &Child, signal: &str) {
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// The JSON-RPC answer (result or error) to request `id` in a JSON or SSE
/// body.
fn answer_in(text: &str, id: u64) -> Option<Value> {
    let is_answer =
        |v: &Value| v["id"] == json!(id) && (v.get("result").is_some() || v.get("error").is_some());
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return is_answer(&v).then_some(v);
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(is_answer)
}

/// POSTs `body` to the gateway (on session `session`); the status and body.
async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::Result<(u16, reqwest::header::HeaderMap, String)> {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.body(body.to_string()).send().await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    Ok((status, headers, response.text().await?))
}

/// An `initialize` request.
fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "shutdown", "version": "1"}}})
}

/// A `tools/call` request.
fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

/// A session-era MCP session on the gateway at `url`: its id.
async fn session(client: &reqwest::Client, url: &str) -> String {
    let (status, headers, text) = post(client, url, None, &initialize(0)).await.unwrap();
    assert_eq!(status, 200, "{text}");
    let id = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, text) = post(client, url, Some(&id), &initialized).await.unwrap();
    assert!(status < 300, "{status}: {text}");
    id
}

/// The calls in flight: `EACH` barrier calls (released by the test) and
/// `EACH` sleep calls (never done), each on its own request; their
/// answers, barrier calls first, once all came.
fn calls_in_flight(
    client: &reqwest::Client,
    url: &str,
    sessions: [&str; 2],
) -> tokio::task::JoinHandle<Vec<Value>> {
    let mut answers = Vec::new();
    for n in 0..2 * EACH {
        let id = n as u64 + 1;
        let (session, request) = if n < EACH {
            let args = json!({"key": "drain", "parties": EACH + 1});
            (sessions[0], call(id, "mcp__kit__barrier", args))
        } else {
            (
                sessions[1],
                call(id, "mcp__slow__sleep", json!({"ms": 600_000})),
            )
        };
        let (client, url, session) = (client.clone(), url.to_owned(), session.to_owned());
        answers.push(tokio::spawn(async move {
            let (status, _, text) = post(&client, &url, Some(&session), &request)
                .await
                .unwrap_or_else(|e| panic!("call {id} got no answer: {e}"));
            assert_eq!(status, 200, "call {id}: {text}");
            answer_in(&text, id).unwrap_or_else(|| panic!("call {id} got no answer: {text}"))
        }));
    }
    tokio::spawn(async move {
        let mut all = Vec::new();
        for answer in answers {
            all.push(answer.await.unwrap());
        }
        all
    })
}

/// Releases the barrier calls in flight: the last of `parties`, called on
/// the upstream directly.
async fn release(kit_url: &str, parties: usize) {
    let client = extpool_testkit::client::connect_http(kit_url)
        .await
        .unwrap();
    let mut params = rmcp::model::CallToolRequestParams::new("barrier");
    params.arguments = json!({"key": "drain", "parties": parties})
        .as_object()
        .cloned();
    let released = client.call_tool(params).await;
    assert!(released.is_ok(), "{released:?}");
    let _ = client.cancel().await;
}

/// Checks what the calls got: each barrier call its result, each sleep
/// call the shutdown error.
fn check_answers(answers: &[Value]) {
    assert_eq!(answers.len(), 2 * EACH);
    for answer in &answers[..EACH] {
        assert!(
            answer.get("error").is_none(),
            "a call that finished in time: {answer}"
        );
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    }
    for answer in &answers[EACH..] {
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("shut down before the request finished")
                && message.contains("--shutdown-timeout"),
            "a call still running at the bound: {answer}"
        );
    }
}

/// Serve stopped by `signal` with `2 * EACH` calls in flight; returns
/// its exit code once it and the server it started are gone.
async fn stopped_with_calls_in_flight(signal: &str) -> i32 {
    let slow = StateDir::new();
    let kit_state = StateDir::new();
    let kit = HttpServer::spawn(kit_state.args());
    let sb = sandbox(&slow, kit.url());
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--toolhive=false",
        "--shutdown-timeout",
        GRACE,
    ];
    let mut child = spawn(&sb, &args);
    let mut stdout = lines(child.stdout.take().unwrap());
    let mut stderr = lines(child.stderr.take().unwrap());
    let line = line_with(&mut stdout, "http://").await;
    let url = line[line.find("http://").unwrap()..].trim().to_owned();
    let client = reqwest::Client::new();
    let sessions = [session(&client, &url).await, session(&client, &url).await];
    // The session's own stream, open until the shutdown ends it.
    let stream = client
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sessions[0])
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let stream = tokio::spawn(stream.text());
    let answers = calls_in_flight(&client, &url, [&sessions[0], &sessions[1]]);
    kit_state
        .until("the barrier calls arrived", PATIENCE, |s| {
            s.arrivals("drain") == EACH as u64
        })
        .await;
    slow.until("the sleep calls arrived", PATIENCE, |s| {
        s.counter("sleep") == EACH as u64
    })
    .await;
    let server = slow.pids()[0];
    send(&child, signal);
    line_with(&mut stderr, STOPPING).await;
    // A new connection is refused (or told 503 if it raced the close).
    let late = post(&reqwest::Client::new(), &url, None, &initialize(99)).await;
    if let Ok((status, _, text)) = &late {
        assert_eq!(
            *status, 503,
            "a connection after the signal was served: {text}"
        );
    }
    let ended = tokio::time::timeout(PATIENCE, stream).await;
    assert!(ended.is_ok(), "the session's stream stayed open");
    release(kit.url(), EACH + 1).await;
    let answers = tokio::time::timeout(PATIENCE, answers)
        .await
        .expect("every call answered")
        .unwrap();
    check_answers(&answers);
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("serve exited")
        .unwrap();
    extpool_testkit::procs::exited(server).await;
    status.code().unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_answers_every_call_in_flight_closes_the_servers_and_exits_130() {
    assert_eq!(stopped_with_calls_in_flight("INT").await, 130);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_every_call_in_flight_closes_the_servers_and_exits_143() {
    assert_eq!(stopped_with_calls_in_flight("TERM").await, 143);
}

/// Writes one JSON-RPC message to serve's stdin.
async fn write(stdin: &mut tokio::process::ChildStdin, message: &Value) {
    stdin
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
    stdin.flush().await.unwrap();
}

/// Serve's stdout over stdio, read into the answers by request id.
struct Answers {
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<Value>,
}

impl Answers {
    /// Waits for the answer to request `id`; every answer must be the
    /// only one to its request.
    async fn answer(&mut self, id: u64) -> Value {
        let found = async {
            loop {
                if let Some(answer) = self.seen.iter().find(|a| a["id"] == json!(id)) {
                    return answer.clone();
                }
                let Some(line) = self.lines.recv().await else {
                    panic!("stdout ended before the answer to {id}")
                };
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if message.get("result").is_some() || message.get("error").is_some() {
                    let twice = self.seen.iter().any(|a| a["id"] == message["id"]);
                    assert!(!twice, "a second answer: {message}");
                    self.seen.push(message);
                }
            }
        };
        tokio::time::timeout(PATIENCE, found)
            .await
            .unwrap_or_else(|_| panic!("no answer to {id}"))
    }

    /// Reads stdout to its end: no answer comes twice.
    async fn rest(&mut self) {
        let rest = async {
            while let Some(line) = self.lines.recv().await {
                if let Ok(message) = serde_json::from_str::<Value>(&line)
                    && message
                        .get("id")
                        .is_some_and(|id| self.seen.iter().any(|a| &a["id"] == id))
                {
                    panic!("a second answer: {message}");
                }
            }
        };
        tokio::time::timeout(PATIENCE, rest)
            .await
            .expect("stdout closed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_of_serve_stdio_refuses_new_requests_and_answers_those_in_flight() {
    let slow = StateDir::new();
    let kit_state = StateDir::new();
    let kit = HttpServer::spawn(kit_state.args());
    let sb = sandbox(&slow, kit.url());
    let args = [
        "serve",
        "--stdio",
        "--toolhive=false",
        "--shutdown-timeout",
        GRACE,
    ];
    let mut child = spawn(&sb, &args);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = Answers {
        lines: lines(child.stdout.take().unwrap()),
        seen: Vec::new(),
    };
    let mut stderr = lines(child.stderr.take().unwrap());
    write(&mut stdin, &initialize(0)).await;
    stdout.answer(0).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    write(&mut stdin, &initialized).await;
    // Barrier calls on the test's own upstream: released below.
    let barrier = |id| {
        call(
            id,
            "mcp__kit__barrier",
            json!({"key": "drain", "parties": 3}),
        )
    };
    write(&mut stdin, &barrier(1)).await;
    write(&mut stdin, &barrier(2)).await;
    write(
        &mut stdin,
        &call(3, "mcp__slow__sleep", json!({"ms": 600_000})),
    )
    .await;
    kit_state
        .until("the barrier calls arrived", PATIENCE, |s| {
            s.arrivals("drain") == 2
        })
        .await;
    slow.until("the sleep call arrived", PATIENCE, |s| {
        s.counter("sleep") == 1
    })
    .await;
    let server = slow.pids()[0];
    send(&child, "HUP");
    line_with(&mut stderr, STOPPING).await;
    // A new request is refused at once, while the calls run on.
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    write(&mut stdin, &list).await;
    let refused = stdout.answer(4).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("shutting down and takes no new requests"),
        "{refused}"
    );
    release(kit.url(), 3).await;
    for id in [1, 2] {
        let answer = stdout.answer(id).await;
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    }
    let cancelled = stdout.answer(3).await;
    let message = cancelled["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("shut down before the request finished"),
        "{cancelled}"
    );
    stdout.rest().await;
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("serve exited")
        .unwrap();
    assert_eq!(status.code(), Some(129), "128 + SIGHUP");
    extpool_testkit::procs::exited(server).await;
}

/// `extpool serve` on `state` as replica `id`, and its base URL.
async fn replica(sb: &Sandbox, state: &str, id: &str) -> (Child, String) {
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--toolhive=false",
        "--state",
        state,
        "--replica-id",
        id,
        // No sweep during the test: a replica absent has left by itself.
        "--replica-heartbeat",
        "3600",
    ];
    let mut child = spawn(sb, &args);
    let mut stdout = lines(child.stdout.take().unwrap());
    let line = line_with(&mut stdout, "http://").await;
    let url = line[line.find("http://").unwrap()..].trim();
    let base = url.trim_end_matches("/mcp").to_owned();
    tokio::spawn(async move { while stdout.recv().await.is_some() {} });
    (child, base)
}

/// The ids `GET /v1/replicas` lists at `base`.
async fn replica_ids(base: &str) -> Vec<String> {
    let answer: Value = reqwest::get(format!("{base}/v1/replicas"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut ids: Vec<String> = answer["replicas"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_by_a_signal_leaves_the_replica_set_at_once() {
    let sb = Sandbox::new();
    sb.write(
        "extpool.yaml",
        "mcp_servers: {}\nskills:\n  default_roots: false\n",
    );
    // Replicas share a PostgreSQL store (an SQLite file serves one gateway).
    let pg = extpool_testkit::postgres::PgServer::shared();
    let state = pg.database();
    let (mut first, _) = replica(&sb, &state, "first").await;
    let (_second, base) = replica(&sb, &state, "second").await;
    assert_eq!(replica_ids(&base).await, ["first", "second"]);
    send(&first, "TERM");
    let status = tokio::time::timeout(PATIENCE, first.wait())
        .await
        .expect("serve exited")
        .unwrap();
    assert_eq!(status.code(), Some(143));
    assert_eq!(replica_ids(&base).await, ["second"]);
}
