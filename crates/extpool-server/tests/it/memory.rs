//! Memory the gateway bounds, whatever its clients do, over raw HTTP:
//! the answers it keeps for resuming stay within one gateway-wide budget
//! (the oldest finished dropped first, a resume of one answered as for an
//! event id never issued).

use extpool_server::GatewayOptions;
use extpool_testkit::StateDir;
use serde_json::{Value, json};

use crate::support::{Project, Served, mcp_post, testkit_yaml, within};

const VERSION: &str = "2025-11-25";

/// The replay budget of these tests, in bytes.
const BUDGET: usize = 1_000_000;
/// Each result's text, in bytes (under the default result limit).
const RESULT: usize = 90_000;

/// The gateway on the testkit server with an SQLite state store (so every
/// answer an upstream gives is sent as a stream, kept for resuming), and
/// the store's directory.
async fn served(options: GatewayOptions) -> (StateDir, Served, tempfile::TempDir) {
    let state = StateDir::new();
    let project = Project::new();
    project.config(&testkit_yaml("testkit", &state));
    let db = tempfile::tempdir().unwrap();
    let store = extpool_state::StateStore::open_url(&format!(
        "sqlite:{}",
        db.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let options = GatewayOptions {
        state: Some(store),
        ..options
    };
    (state, Served::start(project, options).await, db)
}

/// A session-era session on `url`, `initialized` sent.
async fn session(url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let response = within(mcp_post(url, None, init.to_string()).send())
        .await
        .unwrap();
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = within(mcp_post(url, Some((&id, VERSION)), initialized.to_string()).send())
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    id
}

/// Calls `large_text` as request `n` of session `id`: the answer's first
/// event id (its stream's priming event), read whole; `None` for an
/// answer ready at once, sent as JSON (not a stream, nothing kept).
async fn call_large(url: &str, id: &str, n: u64) -> Option<String> {
    let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": "mcp__testkit__large_text", "arguments": {"bytes": RESULT}}});
    let response = within(mcp_post(url, Some((id, VERSION)), call.to_string()).send())
        .await
        .unwrap();
    let content_type = response.headers()["content-type"].to_str().unwrap();
    let streamed = content_type.starts_with("text/event-stream");
    let text = within(response.text()).await.unwrap();
    assert!(text.len() > RESULT, "{}", &text[..200.min(text.len())]);
    if !streamed {
        return None;
    }
    let first = text
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|l| l.trim().to_owned())
        .unwrap_or_else(|| panic!("no event id in {}", &text[..200.min(text.len())]));
    Some(first)
}

/// A `GET` of session `id` resuming after `last_event_id`.
async fn resume(url: &str, id: &str, last_event_id: &str) -> reqwest::Response {
    within(
        reqwest::Client::new()
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", VERSION)
            .header("last-event-id", last_event_id)
            .send(),
    )
    .await
    .unwrap()
}

/// Ends session `id` (`DELETE`), so any stream of it ends.
async fn end(url: &str, id: &str) {
    let response = within(
        reqwest::Client::new()
            .delete(url)
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", VERSION)
            .send(),
    )
    .await
    .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
}

/// The value of metric `name` (a series without labels).
async fn metric(base: &str, name: &str) -> f64 {
    let text = within(reqwest::get(format!("{base}/metrics")))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

/// What a resume answered: its status, its content type and, once the
/// session was ended, every `data:` event it carried.
async fn resumed_then_ended(url: &str, id: &str, last_event_id: &str) -> (u16, String, Vec<Value>) {
    let response = resume(url, id, last_event_id).await;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    end(url, id).await;
    let text = within(response.text()).await.unwrap();
    let events = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    (status, content_type, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_answers_stay_within_the_gateway_budget_dropping_the_oldest_first() {
    let (_state, served, _db) = served(GatewayOptions {
        max_replay_bytes: BUDGET,
        ..GatewayOptions::default()
    })
    .await;
    let url = served.url.clone();
    // Three sessions of six streamed answers each: about twice the budget.
    let mut answers = Vec::new();
    for _ in 0..3 {
        let id = session(&url).await;
        let mut streamed = 0;
        for n in 1..=100 {
            if let Some(first) = call_large(&url, &id, n).await {
                answers.push((id.clone(), n, first));
                streamed += 1;
            }
            if streamed == 6 {
                break;
            }
        }
        assert_eq!(streamed, 6, "answers sent as streams");
    }
    let kept = metric(&served.base, "extpool_replay_bytes").await;
    assert!(kept <= BUDGET as f64, "{kept} bytes kept");
    assert!(kept >= (BUDGET - 2 * RESULT) as f64, "{kept} bytes kept");
    assert_eq!(
        metric(&served.base, "extpool_replay_limit_bytes").await,
        BUDGET as f64
    );
    let dropped = metric(&served.base, "extpool_replay_dropped_total").await;
    assert!(dropped >= 7.0, "{dropped} dropped");

    // The newest still resumes: its answer again.
    let (id, n, first) = answers.last().unwrap().clone();
    let (status, _, events) = resumed_then_ended(&url, &id, &first).await;
    assert_eq!(status, 200);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["id"], n);

    // The oldest was dropped: resumed, it answers as an id never issued
    // does (another session's, same shape), with nothing of its own.
    let (id, _, first) = answers[0].clone();
    let dropped = resumed_then_ended(&url, &id, &first).await;
    let (other, _, _) = answers[6].clone();
    let (index, rest) = first.split_once("/i").unwrap();
    let tail = rest
        .split_once('@')
        .map(|(_, t)| format!("@{t}"))
        .unwrap_or_default();
    let never = format!("{index}/i999999{tail}");
    assert_ne!(never, first);
    let unknown = resumed_then_ended(&url, &other, &never).await;
    assert_eq!(
        (dropped.0, &dropped.1),
        (unknown.0, &unknown.1),
        "a dropped stream is answered as an unknown one"
    );
    assert!(dropped.2.is_empty(), "{:?}", dropped.2);
    served.stop().await;
}

/// Tools of the `big` server: 10 of 1 MB descriptions, so the page's
/// `tools` event is about 10 MB (more than the kernel buffers a socket).
fn big_tools() -> Value {
    let tools: Vec<Value> = (0..10)
        .map(|i| {
            json!({
                "name": format!("big_{i}"),
                "description": "d".repeat(1_000_000),
                "inputSchema": {"type": "object"},
            })
        })
        .collect();
    Value::Array(tools)
}

/// The next SSE event of `response` (`buffer` keeps what came after):
/// its kind and data.
async fn page_event(response: &mut reqwest::Response, buffer: &mut Vec<u8>) -> (String, String) {
    loop {
        if let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buffer.drain(..end + 2).collect();
            let event = String::from_utf8(event).unwrap();
            let kind = event.lines().find_map(|l| l.strip_prefix("event: "));
            let data = event.lines().find_map(|l| l.strip_prefix("data: "));
            if let (Some(kind), Some(data)) = (kind, data) {
                return (kind.to_owned(), data.to_owned());
            }
            continue;
        }
        let chunk = within(response.chunk())
            .await
            .unwrap()
            .expect("the stream ended");
        buffer.extend_from_slice(&chunk);
    }
}

async fn page_stream(base: &str) -> reqwest::Response {
    within(
        reqwest::Client::new()
            .get(format!("{base}/v1/page/events"))
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_reader_that_falls_behind_is_dropped_and_one_past_the_limit_refused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::support::server_yaml;

    let state = StateDir::new();
    let project = Project::new();
    let file = project.path().join("tools.json");
    std::fs::write(&file, big_tools().to_string()).unwrap();
    let big =
        extpool_testkit::stdio_command(["--tools-file".to_owned(), file.display().to_string()]);
    project.config(&format!(
        "{}{}",
        testkit_yaml("testkit", &state),
        server_yaml("big", big)
    ));
    let served = Served::start(
        project,
        GatewayOptions {
            max_page_streams: 2,
            page_stream_bytes: 1_000_000,
            ..GatewayOptions::default()
        },
    )
    .await;
    let base = served.base.clone();

    // A reader that takes everything: the tools, then the snapshot.
    let mut fast = page_stream(&base).await;
    assert_eq!(fast.status(), 200);
    let mut buffer = Vec::new();
    let (kind, tools) = page_event(&mut fast, &mut buffer).await;
    assert_eq!(kind, "tools");
    assert!(tools.len() > 10_000_000, "{}", tools.len());
    assert_eq!(page_event(&mut fast, &mut buffer).await.0, "snapshot");

    // A reader that takes a few bytes, then nothing (a small receive
    // buffer): its connection holds most of the tools unwritten.
    let address = base.trim_start_matches("http://").to_owned();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut slow = within(socket.connect(address.parse().unwrap()))
        .await
        .unwrap();
    let request = format!(
        "GET /v1/page/events HTTP/1.1\r\nHost: {address}\r\naccept: text/event-stream\r\n\r\n"
    );
    slow.write_all(request.as_bytes()).await.unwrap();
    let mut start = [0u8; 512];
    within(slow.read_exact(&mut start)).await.unwrap();
    assert!(
        start.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&start)
    );

    // A third is refused at once, saying why.
    let third = page_stream(&base).await;
    assert_eq!(third.status(), 503);
    assert!(third.headers().contains_key("retry-after"));
    let said = third.text().await.unwrap();
    assert!(
        said.contains("2 event streams open") && said.contains("--max-page-streams"),
        "{said}"
    );

    // The catalog changes: a new tools event of 10 MB, which the slow
    // reader is far behind on: it is dropped; the fast one gets it.
    let id = session(&served.url).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "mcp__testkit__add_tool", "arguments": {"name": "fresh"}}});
    let response = within(mcp_post(&served.url, Some((&id, VERSION)), call.to_string()).send())
        .await
        .unwrap();
    assert!(response.status().is_success());
    loop {
        let (kind, data) = page_event(&mut fast, &mut buffer).await;
        if kind == "tools" && data.contains("mcp__testkit__fresh") {
            break;
        }
    }
    // The slow one's connection is closed before it had the tools it was
    // given, let alone the new ones.
    let mut rest = Vec::new();
    let read = match within(slow.read_to_end(&mut rest)).await {
        Ok(_) => rest.len(),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => rest.len(),
        Err(e) => panic!("{e}"),
    };
    assert!(read < 10_000_000, "{read} bytes after the cut");
    assert_eq!(
        metric(&base, "extpool_page_streams_dropped_total").await,
        1.0,
        "the slow reader only"
    );
    // Its place is free again.
    assert_eq!(metric(&base, "extpool_page_streams").await, 1.0);
    let again = page_stream(&base).await;
    assert_eq!(again.status(), 200);
    served.stop().await;
}
