//! How a session-era request is answered over raw HTTP: as
//! `application/json` when nothing precedes its result, as an SSE stream
//! when the call's progress, log messages or an upstream's requests of the
//! client come first (each before the result, the result last; the
//! client's answers POSTed back reach the upstream); a call not answered
//! at once streams, primed, and a client whose connection broke resumes
//! it with `Last-Event-ID`. A `notifications/cancelled` naming a call in
//! flight cancels it upstream.

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{PATIENCE, Project, Served, mcp_post, remote_yaml, testkit_yaml, within};

const VERSION: &str = "2025-11-25";

/// An answer's content type and its JSON-RPC messages (one for JSON, each
/// event's for SSE).
struct Answer {
    status: u16,
    content_type: String,
    session: Option<String>,
    messages: Vec<Value>,
}

async fn post(url: &str, session: Option<&str>, body: Value) -> Answer {
    let request = mcp_post(url, session.map(|id| (id, VERSION)), body.to_string());
    let response = within(request.send()).await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (status, content_type, session) = (
        response.status().as_u16(),
        header("content-type").unwrap_or_default(),
        header("mcp-session-id"),
    );
    let text = within(response.text()).await.unwrap();
    let messages = if content_type.starts_with("application/json") {
        vec![serde_json::from_str(&text).unwrap()]
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .collect()
    };
    Answer {
        status,
        content_type,
        session,
        messages,
    }
}

/// A session made with `capabilities`, `initialized` sent.
async fn session(url: &str, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = post(url, None, init).await;
    let id = answer.session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, Some(&id), initialized).await.status, 202);
    id
}

/// The gateway in front of the testkit server (recording in the state
/// returned), and a session made on it without capabilities.
async fn served_with_session() -> (StateDir, Served, String) {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let id = session(&served.url, json!({})).await;
    (state, served, id)
}

fn call(id: u64, tool: &str, args: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"name": format!("mcp__testkit__{tool}"), "arguments": args});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

fn text(message: &Value) -> &str {
    message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {message}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_alone_is_json_and_what_precedes_it_makes_a_stream() {
    let (_state, served, id) = served_with_session().await;
    let url = served.url.clone();

    let plain = post(
        &url,
        Some(&id),
        call(1, "echo", json!({"message": "hi"}), None),
    )
    .await;
    assert_eq!(plain.status, 200);
    assert!(
        plain.content_type.starts_with("application/json"),
        "{}",
        plain.content_type
    );
    assert_eq!(plain.messages[0]["id"], 1);
    assert_eq!(text(&plain.messages[0]), "hi");

    // Progress before the result: a stream, progress first, result last.
    let progress = post(
        &url,
        Some(&id),
        call(
            2,
            "notify",
            json!({"kind": "progress", "count": 3}),
            Some(json!({"progressToken": "p2"})),
        ),
    )
    .await;
    assert!(
        progress.content_type.starts_with("text/event-stream"),
        "{}",
        progress.content_type
    );
    let methods: Vec<&str> = progress
        .messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("result"))
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            "result"
        ],
        "{:?}",
        progress.messages
    );
    let steps: Vec<f64> = progress.messages[..3]
        .iter()
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p2");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(steps, [1.0, 2.0, 3.0]);
    assert_eq!(progress.messages[3]["id"], 2);
    assert_eq!(text(&progress.messages[3]), "sent 3");

    // Log messages before the result: the same.
    let logs = post(
        &url,
        Some(&id),
        call(3, "notify", json!({"kind": "log", "count": 2}), None),
    )
    .await;
    assert!(logs.content_type.starts_with("text/event-stream"));
    let data: Vec<&str> = logs
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["data"].as_str().unwrap())
        .collect();
    assert_eq!(data, ["log line 0", "log line 1"], "{:?}", logs.messages);
    assert_eq!(logs.messages.last().unwrap()["id"], 3);

    // An error is answered as JSON as well, with its id.
    let unknown = post(&url, Some(&id), call(4, "no_such_tool", json!({}), None)).await;
    assert!(unknown.content_type.starts_with("application/json"));
    assert_eq!(unknown.messages[0]["id"], 4);
    assert!(
        unknown.messages[0]["error"]["message"].is_string(),
        "{:?}",
        unknown.messages
    );

    // An upstream's request of the client goes on the call's stream, and
    // the client's answer, POSTed back, reaches the upstream.
    let asking = session(&url, json!({"elicitation": {}})).await;
    let mut stream = start(
        &url,
        &asking,
        call(5, "notify", json!({"kind": "elicit", "count": 2}), None),
    )
    .await;
    for _ in 0..2 {
        let ask = next_message(&mut stream).await;
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
            "result": {"action": "decline"}});
        assert_eq!(post(&url, Some(&asking), answer).await.status, 202);
    }
    let result = next_message(&mut stream).await;
    assert_eq!(result["id"], 5, "{result}");
    assert_eq!(
        text(&result),
        "accepted 0, declined 2, cancelled 0, failed 0"
    );
    served.stop().await;
}

/// An SSE answer being read, and what of it was read but not yet taken.
struct Stream {
    response: reqwest::Response,
    buffered: String,
}

/// POSTs `body` on session `id` and returns its answer, which must be an
/// SSE stream, unread.
async fn start(url: &str, id: &str, body: Value) -> Stream {
    let response = within(mcp_post(url, Some((id, VERSION)), body.to_string()).send())
        .await
        .unwrap();
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    Stream {
        response,
        buffered: String::new(),
    }
}

/// The next JSON-RPC message of `stream` (reading more as needed).
async fn next_message(stream: &mut Stream) -> Value {
    loop {
        while let Some(end) = stream.buffered.find("\n\n") {
            let event: String = stream.buffered.drain(..end + 2).collect();
            if let Some(message) = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            {
                return message;
            }
        }
        let chunk = within(stream.response.chunk())
            .await
            .unwrap()
            .expect("the stream ended before the message");
        stream
            .buffered
            .push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_streams_primed_and_is_resumed_after_its_connection_broke() {
    let (state, served, id) = served_with_session().await;
    let url = served.url.clone();
    // Not answered at once: a stream, its first event the priming one.
    let mut stream = start(&url, &id, call(8, "sleep", json!({"ms": 1500}), None)).await;
    let priming = loop {
        let chunk = within(stream.response.chunk()).await.unwrap().unwrap();
        stream
            .buffered
            .push_str(std::str::from_utf8(&chunk).unwrap());
        if let Some(end) = stream.buffered.find("\n\n") {
            break stream.buffered[..end].to_owned();
        }
    };
    let last_event_id = priming
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no event id in {priming:?}"))
        .to_owned();
    assert!(priming.contains("retry:"), "{priming}");
    // The connection breaks before the answer; the call goes on.
    drop(stream);
    state
        .until("the upstream call started", PATIENCE, |s| {
            s.counter("sleep") == 1
        })
        .await;
    let resumed = within(
        reqwest::Client::new()
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", VERSION)
            .header("last-event-id", &last_event_id)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(resumed.status(), 200);
    let mut resumed = Stream {
        response: resumed,
        buffered: String::new(),
    };
    let answer = next_message(&mut resumed).await;
    assert_eq!(answer["id"], 8, "{answer}");
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(state.counter("cancelled"), 0, "the call was not cancelled");
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_notification_cancels_the_call_it_names() {
    let (state, served, id) = served_with_session().await;
    let url = served.url.clone();
    let call_task = {
        let (url, id) = (url.clone(), id.clone());
        tokio::spawn(async move {
            post(
                &url,
                Some(&id),
                call(9, "sleep", json!({"ms": 60_000}), None),
            )
            .await
        })
    };
    state
        .until("the upstream call started", PATIENCE, |s| {
            s.counter("sleep") == 1
        })
        .await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9, "reason": "test"}});
    assert_eq!(post(&url, Some(&id), cancel).await.status, 202);
    state
        .until("the upstream saw the cancellation", PATIENCE, |s| {
            s.counter("cancelled") == 1
        })
        .await;
    let answered = within(call_task).await.unwrap();
    assert_eq!(answered.messages[0]["id"], 9, "{:?}", answered.messages);
    assert!(
        answered.messages[0]["error"].is_object(),
        "{:?}",
        answered.messages
    );
    served.stop().await;
}

/// A raw HTTP request of session `id` with `accept` and `content_type`
/// (and the negotiated protocol version unless `version` says another).
fn raw(
    url: &str,
    id: &str,
    accept: &str,
    content_type: &str,
    version: &str,
) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(url)
        .header("accept", accept)
        .header("content-type", content_type)
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", version)
        .body(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string())
}

/// Reads `stream`'s SSE data lines until one holds a message of `method`.
async fn until_method(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Unpin),
    method: &str,
) -> Value {
    use futures::StreamExt;
    let mut text = String::new();
    loop {
        let chunk = within(stream.next())
            .await
            .unwrap_or_else(|| panic!("the GET stream ended before {method}: {text}"))
            .expect("a chunk");
        text.push_str(&String::from_utf8_lossy(&chunk));
        let found = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m["method"] == method);
        if let Some(found) = found {
            return found;
        }
    }
}

#[tokio::test]
async fn a_session_is_the_gateways_own_from_initialize_to_delete() {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let served = Served::start(project, GatewayOptions::default()).await;
    let url = &served.url;

    // initialize: JSON, with a session id nobody can guess.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let answer = post(url, None, init).await;
    assert_eq!(answer.status, 200);
    assert!(
        answer.content_type.starts_with("application/json"),
        "{}",
        answer.content_type
    );
    assert_eq!(answer.messages[0]["result"]["protocolVersion"], VERSION);
    let id = answer.session.expect("a session id");
    assert!(
        id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, Some(&id), initialized).await.status, 202);

    // The GET stream: one at a time; it carries what the gateway tells
    // the client outside a call.
    let listen = || {
        reqwest::Client::new()
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", VERSION)
            .send()
    };
    let stream = within(listen()).await.expect("GET");
    assert_eq!(stream.status(), 200);
    assert_eq!(within(listen()).await.expect("GET").status(), 409);
    let mut events = stream.bytes_stream();
    let add = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "mcp__testkit__add_tool", "arguments": {"name": "fresh"}}});
    let added = post(url, Some(&id), add).await;
    assert_eq!(added.status, 200, "{:?}", added.messages);
    until_method(&mut events, "notifications/tools/list_changed").await;

    // Headers rmcp's transport refuses are refused the same way.
    let ok = within(
        raw(
            url,
            &id,
            "application/json, text/event-stream",
            "application/json",
            VERSION,
        )
        .send(),
    )
    .await
    .expect("POST");
    assert_eq!(ok.status(), 200);
    for (accept, content_type, version, status) in [
        ("application/json", "application/json", VERSION, 406),
        (
            "application/json, text/event-stream",
            "text/plain",
            VERSION,
            415,
        ),
        (
            "application/json, text/event-stream",
            "application/json",
            "1999-01-01",
            400,
        ),
        (
            "application/json, text/event-stream",
            "application/json",
            "2026-07-28",
            400,
        ),
    ] {
        let refused = within(raw(url, &id, accept, content_type, version).send())
            .await
            .expect("POST");
        assert_eq!(
            refused.status().as_u16(),
            status,
            "{accept} / {content_type} / {version}"
        );
    }

    // DELETE ends it: 204, its stream ends, its id is unknown from then on.
    let deleted = within(
        reqwest::Client::new()
            .delete(url)
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", VERSION)
            .send(),
    )
    .await
    .expect("DELETE");
    assert_eq!(deleted.status(), 204);
    loop {
        use futures::StreamExt;
        match within(events.next()).await {
            None | Some(Err(_)) => break,
            Some(Ok(_)) => {}
        }
    }
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    assert_eq!(post(url, Some(&id), ping).await.status, 404);
}

/// What order a server's log messages and progress can keep.
enum Interleaved {
    /// The order the server sent them in (one stream: stdio).
    AsSent,
    /// Each kind's own order: a streamable HTTP server may send its log
    /// messages on its `GET` stream and the call's progress on the call's
    /// (as rmcp's does), and nothing orders two streams.
    PerStream,
}

/// Checks that a call of the `testkit` server's `notify` tool, kind
/// mixed (it sends `step i` and then progress i, for each i), reaches the
/// client of session `id` at `url` with every log message and progress,
/// in `order`, before the result.
async fn relays_in_order(url: &str, id: &str, order: Interleaved) {
    const PAIRS: u64 = 100;
    let answer = post(
        url,
        Some(id),
        call(
            1,
            "notify",
            json!({"kind": "mixed", "count": PAIRS}),
            Some(json!({"progressToken": "mixed"})),
        ),
    )
    .await;
    assert!(
        answer.content_type.starts_with("text/event-stream"),
        "{}",
        answer.content_type
    );
    let (result, relayed) = answer.messages.split_last().expect("messages");
    assert_eq!(result["id"], 1, "{result}");
    assert_eq!(text(result), format!("sent {PAIRS}"));
    let relayed: Vec<String> = relayed
        .iter()
        .map(|m| match m["method"].as_str() {
            Some("notifications/message") => {
                let data = m["params"]["data"].as_str().unwrap();
                format!("log {}", data.strip_prefix("step ").unwrap())
            }
            Some("notifications/progress") => {
                assert_eq!(m["params"]["progressToken"], "mixed", "{m}");
                format!("progress {}", m["params"]["progress"].as_f64().unwrap())
            }
            _ => panic!("not relayed from the call: {m}"),
        })
        .collect();
    let sent: Vec<String> = (1..=PAIRS)
        .flat_map(|i| [format!("log {i}"), format!("progress {i}")])
        .collect();
    match order {
        Interleaved::AsSent => assert_eq!(relayed, sent),
        Interleaved::PerStream => {
            let of_kind = |all: &[String], kind: &str| -> Vec<String> {
                all.iter()
                    .filter(|m| m.starts_with(kind))
                    .cloned()
                    .collect()
            };
            // The progress comes on the result's stream: all of it, in order.
            let progress = of_kind(&relayed, "progress ");
            assert_eq!(progress, of_kind(&sent, "progress "), "{relayed:?}");
            // The log messages, in order; those still on their way on the
            // other stream when the result came are not the call's any more.
            let logs = of_kind(&relayed, "log ");
            let steps: Vec<u64> = logs.iter().map(|l| l[4..].parse().unwrap()).collect();
            assert!(!steps.is_empty(), "{relayed:?}");
            assert!(steps.windows(2).all(|w| w[0] < w[1]), "{logs:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_log_messages_and_progress_reach_its_stream_in_the_order_they_were_sent() {
    let (_state, served, id) = served_with_session().await;
    relays_in_order(&served.url, &id, Interleaved::AsSent).await;
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_servers_log_messages_and_progress_each_keep_their_order() {
    let upstream = extpool_testkit::HttpServer::start();
    let project = Project::new();
    project.config(&remote_yaml("testkit", upstream.url(), "session", ""));
    let served = Served::start(project, GatewayOptions::default()).await;
    let id = session(&served.url, json!({})).await;
    relays_in_order(&served.url, &id, Interleaved::PerStream).await;
    served.stop().await;
}
