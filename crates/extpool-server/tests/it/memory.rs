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
            // Above the two tools events (10 MB each) one catalog change
            // may make while the fast reader is still reading the first:
            // a reader that takes everything is never dropped. The slow
            // reader falls behind by every change's events and is dropped
            // within three changes.
            page_stream_bytes: 25_000_000,
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
    // From here it reads everything as it comes, whatever the test does
    // meanwhile (as a browser's page would): each tools event's data is
    // handed over.
    let (tools_tx, mut tools_rx) = tokio::sync::mpsc::unbounded_channel();
    let drain = tokio::spawn(async move {
        loop {
            let (kind, data) = page_event(&mut fast, &mut buffer).await;
            if kind == "tools" && tools_tx.send(data).is_err() {
                return;
            }
        }
    });

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

    // The catalog changes, one tool added at a time: each change makes a
    // tools event of 10 MB, which the slow reader is far behind on; the
    // fast one gets each before the next change. Within a few changes
    // the slow one is dropped, the fast one never.
    let id = session(&served.url).await;
    let mut changes = 0;
    while metric(&base, "extpool_page_streams_dropped_total").await == 0.0 {
        changes += 1;
        assert!(changes <= 6, "the slow reader was never dropped");
        let name = format!("fresh{changes}");
        let call = json!({"jsonrpc": "2.0", "id": changes, "method": "tools/call",
            "params": {"name": "mcp__testkit__add_tool", "arguments": {"name": name}}});
        let response = within(mcp_post(&served.url, Some((&id, VERSION)), call.to_string()).send())
            .await
            .unwrap();
        assert!(response.status().is_success());
        let listed = format!("\"mcp__testkit__{name}\"");
        loop {
            let data = within(tools_rx.recv())
                .await
                .expect("the fast reader's stream");
            if data.contains(&listed) {
                break;
            }
        }
    }
    assert!(
        changes >= 2,
        "dropped after {changes} change(s), within its bound"
    );
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
    drain.abort();
    served.stop().await;
}

/// Counts the bytes this test binary holds on the heap (asked for, not
/// what the allocator rounds them to), so a test measures what the gateway
/// keeps deterministically, whatever the allocator does with pages.
pub struct Counting;

static HELD: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
/// The most [`HELD`] reached since [`peak_from_now`].
static PEAK: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Adds `bytes` (negative: freed) to what is held, noting a new peak.
fn count(bytes: i64) {
    use std::sync::atomic::Ordering::Relaxed;
    let now = HELD.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

/// Starts measuring the peak from what is held now.
fn peak_from_now() {
    PEAK.store(held(), std::sync::atomic::Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// counter only records the sizes. (A global allocator is an unsafe trait.)
#[allow(unsafe_code)]
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        count(-(layout.size() as i64));
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        count(new as i64 - layout.size() as i64);
        // SAFETY: the caller's contract, passed on.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

/// The bytes this process holds on the heap now.
fn held() -> i64 {
    HELD.load(std::sync::atomic::Ordering::Relaxed)
}

/// Environment variable that turns [`tool_list_probe`] into a probe: the
/// number of tools its upstream serves.
const PROBE_TOOLS: &str = "EXTPOOL_MEMORY_PROBE_TOOLS";

/// `n` tools of about 250 bytes each as a `tools/list` has them (a
/// description, a schema of two properties), as JSON.
fn many_tools(n: usize) -> Value {
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "name": format!("tool_{i:05}"),
                "description": format!("Tool number {i} looks things up in the index {i}."),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What to look for."},
                        "limit": {"type": "integer", "minimum": 1},
                    },
                    "required": ["query"],
                },
            })
        })
        .collect();
    Value::Array(tools)
}

/// In a child process (this test binary, run on this test alone, so no
/// other test allocates meanwhile): serves an upstream of
/// `$EXTPOOL_MEMORY_PROBE_TOOLS` tools, lists them three times on one
/// session, and prints the list's size and the bytes held at each step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_list_probe() {
    let Some(n) = std::env::var(PROBE_TOOLS).ok().and_then(|n| n.parse().ok()) else {
        return;
    };
    use crate::support::server_yaml;
    let project = Project::new();
    let file = project.path().join("tools.json");
    std::fs::write(&file, many_tools(n).to_string()).unwrap();
    let big =
        extpool_testkit::stdio_command(["--tools-file".to_owned(), file.display().to_string()]);
    project.config(&server_yaml("big", big));
    let before = held();
    peak_from_now();
    let served = Served::start(project, GatewayOptions::default()).await;
    let url = served.url.clone();
    let id = session(&url).await;
    let mut steps = vec![
        ("started", held() - before),
        (
            "peak_started",
            PEAK.load(std::sync::atomic::Ordering::Relaxed) - before,
        ),
    ];
    let mut list_bytes = 0;
    for (n, step) in [(1, "listed1"), (2, "listed2"), (3, "listed3")] {
        let list = json!({"jsonrpc": "2.0", "id": n, "method": "tools/list"});
        let response = within(mcp_post(&url, Some((&id, VERSION)), list.to_string()).send())
            .await
            .unwrap();
        let text = within(response.text()).await.unwrap();
        // The answer's JSON (the body, or the data of its one event).
        let answer = text
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .unwrap_or(&text)
            .trim();
        assert!(
            answer.contains("mcp__big__tool_00000"),
            "{}",
            &answer[..200.min(answer.len())]
        );
        list_bytes = answer.len();
        drop(text);
        // The gateway may still be dropping the answer it sent: what it
        // holds settles back to where the first list left it, or is
        // recorded as it is after a while.
        let settled = steps
            .iter()
            .find(|(s, _)| *s == "listed1")
            .map(|(_, b)| b + list_bytes as i64 / 4);
        if let Some(settled) = settled {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while held() - before > settled && std::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        steps.push((step, held() - before));
        steps.push((
            "peak_listing",
            PEAK.load(std::sync::atomic::Ordering::Relaxed) - before,
        ));
    }
    #[allow(clippy::print_stdout)]
    {
        println!("PROBE list_bytes={list_bytes}");
        for (step, bytes) in steps {
            println!("PROBE {step}={bytes}");
        }
    }
    end(&url, &id).await;
    served.stop().await;
}

/// Tools of the upstream in [`a_large_tool_list_is_held_once_and_listing_it_copies_no_schema`].
const MANY: usize = 10_000;

/// The figures [`tool_list_probe`] printed, by name.
fn probe_figures(tools: usize) -> std::collections::HashMap<String, Vec<f64>> {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([
            "memory::tool_list_probe",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_TOOLS, tools.to_string())
        .output()
        .expect("the probe runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut figures = std::collections::HashMap::<String, Vec<f64>>::new();
    for (name, value) in stdout
        .lines()
        // The first may follow the harness's `test … ` on its line.
        .filter_map(|l| Some(l.split_once("PROBE ")?.1))
        .filter_map(|l| l.split_once('='))
    {
        figures
            .entry(name.to_owned())
            .or_default()
            .push(value.parse().unwrap());
    }
    assert!(figures.contains_key("listed3"), "{stdout}");
    figures
}

/// An upstream of 10,000 tools behind the gateway: what the gateway holds
/// is proportional to the list (one parsed copy of each schema, shared by
/// the capability's cache, the catalog revision and the view's table), it
/// does not grow as the list is asked for again, and answering a
/// `tools/list` copies no schema for a fingerprint (the list's peak was
/// 38× the list's size when each fingerprint copied every schema, 30×
/// now: what is left is the answer's own copy in MCP's types and its text).
#[test]
fn a_large_tool_list_is_held_once_and_listing_it_copies_no_schema() {
    let figures = probe_figures(MANY);
    let list = figures["list_bytes"][0];
    let held = &figures["listed1"];
    let last = figures["listed3"][0];
    let peak = figures["peak_listing"].iter().copied().fold(0.0, f64::max);
    let times = |bytes: f64| bytes / list;
    // 17× the list's text measured: a parsed schema takes about ten times
    // its text (a B-tree node per object).
    assert!(
        times(held[0]) <= 22.0,
        "held {:.1}× the list",
        times(held[0])
    );
    assert!(
        last - held[0] <= list / 4.0,
        "grew by {:.0} bytes over two more lists of {list:.0}",
        last - held[0]
    );
    assert!(times(peak) <= 34.0, "peak {:.1}× the list", times(peak));
}
