//! The fault matrix: 64 calls in flight against the testkit counter server
//! while it is killed, crash-looped, hung, sent malformed frames, answered
//! with HTTP 4xx/5xx and restarted mid-stream.
//!
//! Of every fault's 64 calls, 32 are held in the server (`barrier_write`, a
//! mutation that records each arrival in the state directory and waits)
//! and 32 are mutations
//! (`counter` with a key of their own, which records each run). After the
//! fault every call has ended, and the state directory says what really ran:
//! - acknowledged results lost: a call the client saw succeed whose run the
//!   server did not record, or recorded with another value — must be 0;
//! - mutations run twice: a key counted twice, or more arrivals at a barrier
//!   than calls sent to it — must be 0;
//! - then 64 new calls all succeed (the client recovered).
//!
//! The figures are printed (`--no-capture` shows them). Waiting is on
//! conditions: calls returning, the server's own counters read through a
//! call; never a sleep.

use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use extpool_mcp::{ClientError, McpClient, McpServerConfig, ReconnectPolicy};
use extpool_testkit::{HttpServer, StateDir};
use serde_json::json;

use crate::support::*;

const HELD: usize = 32;
/// The testkit's `barrier` as a mutation (`--write-barrier`): held in the
/// server, recorded, and never to be sent twice.
const HOLD_TOOL: &str = "barrier_write";
/// The testkit flag that serves it.
const WITH_HOLD: &str = "--write-barrier";
const MUTATIONS: usize = 32;
/// More parties than calls: the held calls wait until the fault ends them.
const NEVER: usize = 64;
/// Every call of a fault must end within this (a call that never returns
/// is a defect the matrix reports by failing).
const ALL_END: Duration = Duration::from_secs(120);

/// What one fault did to its calls.
#[derive(Debug, Default)]
struct Tally {
    fault: &'static str,
    calls: usize,
    ok: usize,
    failed_ran: usize,
    failed_not_run: usize,
    lost: usize,
    twice: usize,
    recovered: usize,
    seconds: f64,
}

impl Tally {
    fn row(&self) -> String {
        format!(
            "{:<22} {:>5} {:>4} {:>11} {:>15} {:>17} {:>10} {:>9} {:>6.1}",
            self.fault,
            self.calls,
            self.ok,
            self.failed_ran,
            self.failed_not_run,
            self.lost,
            self.twice,
            self.recovered,
            self.seconds
        )
    }
}

fn header() -> String {
    format!(
        "{:<22} {:>5} {:>4} {:>11} {:>15} {:>17} {:>10} {:>9} {:>6}",
        "fault",
        "calls",
        "ok",
        "failed, ran",
        "failed, not run",
        "acknowledged lost",
        "ran twice",
        "recovered",
        "secs"
    )
}

fn counter_value(result: &rmcp::model::CallToolResult) -> u64 {
    text(result)
        .parse()
        .unwrap_or_else(|_| panic!("counter answered {result:?}"))
}

/// Calls `barrier key` `HELD` times (each waiting for `parties`), and
/// returns once the server has recorded every arrival.
async fn hold(
    client: &McpClient,
    key: &str,
    parties: usize,
    timeout: Duration,
) -> Vec<tokio::task::JoinHandle<Result<rmcp::model::CallToolResult, ClientError>>> {
    let calls: Vec<_> = (0..HELD)
        .map(|_| {
            let c = client.clone();
            let a = args(json!({"key": key, "parties": parties}));
            tokio::spawn(async move { c.call_tool_with_timeout(HOLD_TOOL, a, Some(timeout)).await })
        })
        .collect();
    let arrivals = format!("barrier-{key}");
    loop {
        let r = client
            .call_tool("count", args(json!({"key": arrivals})))
            .await
            .expect("count");
        if counter_value(&r) >= HELD as u64 {
            return calls;
        }
        tokio::task::yield_now().await;
    }
}

/// Starts the mutations: `counter` with keys `<fault>-<i>`.
fn mutate(
    client: &McpClient,
    fault: &str,
    timeout: Duration,
) -> Vec<(
    String,
    tokio::task::JoinHandle<Result<rmcp::model::CallToolResult, ClientError>>,
)> {
    (0..MUTATIONS)
        .map(|i| {
            let key = format!("{fault}-{i}");
            let c = client.clone();
            let a = args(json!({"key": key}));
            let call =
                tokio::spawn(
                    async move { c.call_tool_with_timeout("counter", a, Some(timeout)).await },
                );
            (key, call)
        })
        .collect()
}

/// Waits for every call, then counts against what the server recorded.
async fn tally(
    fault: &'static str,
    state: &StateDir,
    held_key: &str,
    releasing: usize,
    held: Vec<tokio::task::JoinHandle<Result<rmcp::model::CallToolResult, ClientError>>>,
    mutations: Vec<(
        String,
        tokio::task::JoinHandle<Result<rmcp::model::CallToolResult, ClientError>>,
    )>,
) -> Tally {
    let mut t = Tally {
        fault,
        calls: HELD + MUTATIONS,
        ..Tally::default()
    };
    let ended = tokio::time::timeout(ALL_END, async {
        let mut held_results = Vec::new();
        for call in held {
            held_results.push(call.await.unwrap());
        }
        let mut mutation_results = Vec::new();
        for (key, call) in mutations {
            mutation_results.push((key, call.await.unwrap()));
        }
        (held_results, mutation_results)
    })
    .await;
    let (held_results, mutation_results) =
        ended.unwrap_or_else(|_| panic!("{fault}: a call never returned"));
    for result in &held_results {
        match result {
            Ok(_) => t.ok += 1,
            Err(e) => {
                assert_fault_error(fault, e);
                t.failed_ran += 1;
            }
        }
    }
    let arrivals = state.arrivals(held_key) as usize;
    t.twice += arrivals.saturating_sub(HELD + releasing);
    for (key, result) in &mutation_results {
        let runs = state.counter(key);
        if runs > 1 {
            t.twice += 1;
        }
        match result {
            Ok(r) => {
                t.ok += 1;
                if runs != 1 || counter_value(r) != 1 {
                    t.lost += 1;
                }
            }
            Err(e) => {
                assert_fault_error(fault, e);
                if runs == 0 {
                    t.failed_not_run += 1;
                } else {
                    t.failed_ran += 1;
                }
            }
        }
    }
    t
}

/// A failed call failed for a reason the fault explains, said as such.
fn assert_fault_error(fault: &str, e: &ClientError) {
    assert!(
        e.is_interrupted()
            || e.is_unavailable()
            || e.is_timeout()
            || e.is_server_declared()
            || e.is_auth_required()
            || e.is_connect()
            // An HTTP status the server answered instead of a result.
            || matches!(e, ClientError::Protocol { .. }),
        "{fault}: unexpected error {e:?}"
    );
}

/// 64 new mutations after the fault: how many succeeded.
async fn recover(client: &McpClient, fault: &str, state: &StateDir) -> usize {
    let calls: Vec<_> = (0..HELD + MUTATIONS)
        .map(|i| {
            let key = format!("{}-after-{i}", slug(fault));
            let c = client.clone();
            (
                key.clone(),
                tokio::spawn(
                    async move { c.call_tool("counter", args(json!({"key": key}))).await },
                ),
            )
        })
        .collect();
    let mut ok = 0;
    for (key, call) in calls {
        let r = call
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{fault}: not recovered: {e}"));
        assert_eq!(counter_value(&r), 1, "{fault}: {key}");
        assert_eq!(state.counter(&key), 1, "{fault}: {key}");
        ok += 1;
    }
    ok
}

/// The state directory's arguments, and the held tool.
fn with_hold(state: &StateDir) -> Vec<String> {
    let mut args = state.args();
    args.push(WITH_HOLD.to_owned());
    args
}

fn signal(pid: u32, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// A stdio server started by a script in the state directory.
fn scripted(state: &StateDir, body: &str) -> McpServerConfig {
    let script = state.path().join("server.sh");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cfg = McpServerConfig::stdio(script.to_string_lossy(), Vec::<String>::new());
    cfg.env.insert(
        "KIT_BIN".into(),
        extpool_testkit::server_binary().to_string_lossy().into(),
    );
    cfg.env
        .insert("KIT_STATE".into(), state.path().to_string_lossy().into());
    cfg
}

fn fast_reconnect(mut cfg: McpServerConfig) -> McpServerConfig {
    cfg.reconnect = ReconnectPolicy {
        attempts: 3,
        backoff_ms: 10,
    };
    cfg
}

/// One fault: hold 32 calls, start 32 mutations, run `act`, tally. With
/// `released`, `act` itself released the held calls with one more call to
/// their barrier (so one more arrival is expected).
async fn matrix_row<F, Fut>(
    fault: &'static str,
    client: &McpClient,
    state: &StateDir,
    released: bool,
    timeout: Duration,
    act: F,
) -> Tally
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    let key = format!("{}-held", slug(fault));
    let parties = if released { HELD + 1 } else { NEVER };
    let held = hold(client, &key, parties, timeout).await;
    let mutations = mutate(client, &slug(fault), timeout);
    act().await;
    tally(fault, state, &key, usize::from(released), held, mutations).await
}

/// A fault's name as a counter key (letters, digits and `-`).
fn slug(fault: &str) -> String {
    fault
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The barrier call that releases `fault`'s held calls.
async fn release(client: &McpClient, fault: &str) {
    client
        .call_tool(
            HOLD_TOOL,
            args(json!({"key": format!("{}-held", slug(fault)), "parties": HELD + 1})),
        )
        .await
        .unwrap();
}

async fn killed() -> Tally {
    let state = StateDir::new();
    let client = connect("killed", stdio_cfg(&with_hold(&state))).await;
    let pid = client.pid().unwrap();
    let mut t = matrix_row(
        "killed",
        &client,
        &state,
        false,
        Duration::from_secs(60),
        || async move { signal(pid, "KILL") },
    )
    .await;
    t.recovered = recover(&client, "killed", &state).await;
    assert_eq!(state.starts(), 2, "one new process");
    client.close().await;
    t
}

async fn crash_looped() -> Tally {
    let state = StateDir::new();
    let marker = state.path().join("die");
    let cfg = scripted(
        &state,
        "if [ -e \"$KIT_STATE/die\" ]; then exec \"$KIT_BIN\" --state-dir \"$KIT_STATE\" --die-on-start; fi\n\
         exec \"$KIT_BIN\" --state-dir \"$KIT_STATE\" --write-barrier",
    );
    let client = connect("looped", fast_reconnect(cfg)).await;
    let pid = client.pid().unwrap();
    let looping = client.clone();
    let marker_for_fault = marker.clone();
    let mut t = matrix_row(
        "crash-looped",
        &client,
        &state,
        false,
        Duration::from_secs(60),
        || async move {
            std::fs::write(&marker_for_fault, b"").unwrap();
            signal(pid, "KILL");
            // While it loops, calls fail on each failed start.
            for _ in 0..4 {
                let e = looping.ping().await.unwrap_err();
                assert!(e.is_unavailable(), "{e:?}");
            }
        },
    )
    .await;
    std::fs::remove_file(&marker).unwrap();
    t.recovered = recover(&client, "crash-looped", &state).await;
    assert!(
        state.starts() > 3 * 4,
        "it crash-looped: {} starts",
        state.starts()
    );
    client.close().await;
    t
}

async fn hung() -> Tally {
    let state = StateDir::new();
    let client = connect("hung", stdio_cfg(&with_hold(&state))).await;
    let pid = client.pid().unwrap();
    // The calls end by their timeout: the server stops answering. Once
    // every call has ended (the tally waits for them), it continues.
    let mut t = matrix_row(
        "hung",
        &client,
        &state,
        false,
        Duration::from_secs(2),
        || async move { signal(pid, "STOP") },
    )
    .await;
    signal(pid, "CONT");
    t.recovered = recover(&client, "hung", &state).await;
    assert_eq!(state.starts(), 1, "a hung server is not restarted");
    client.close().await;
    t
}

async fn malformed_frames() -> Tally {
    let state = StateDir::new();
    // After every frame the server writes: a line that is no JSON, a
    // response to a request never sent, a notification MCP does not have,
    // a batch, and a message whose method is a number.
    let cfg = scripted(
        &state,
        "\"$KIT_BIN\" --state-dir \"$KIT_STATE\" --write-barrier | sed -u \
         -e 'a {not json' \
         -e 'a {\"jsonrpc\":\"2.0\",\"id\":424242,\"result\":{}}' \
         -e 'a {\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown\"}' \
         -e 'a [1,2,3]' \
         -e 'a {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":42}'",
    );
    let client = connect("garbled", cfg).await;
    let releaser = client.clone();
    // The held calls are released by one more party: every call succeeds.
    let mut t = matrix_row(
        "malformed frames",
        &client,
        &state,
        true,
        Duration::from_secs(60),
        || async move { release(&releaser, "malformed frames").await },
    )
    .await;
    t.recovered = recover(&client, "malformed frames", &state).await;
    assert_eq!(state.starts(), 1, "the connection survived the garbage");
    assert_eq!(t.ok, HELD + MUTATIONS, "every call answered");
    client.close().await;
    t
}

async fn http_statuses() -> Tally {
    let state = StateDir::new();
    let server = tokio::task::block_in_place(|| HttpServer::spawn(with_hold(&state)));
    let client = connect("statuses", http_cfg(server.url())).await;
    let codes = [400u16, 401, 403, 404, 409, 429, 500, 502, 503, 504];
    let statuses = client.clone();
    let releaser = client.clone();
    let mut t = matrix_row(
        "HTTP 4xx/5xx",
        &client,
        &state,
        true,
        Duration::from_secs(60),
        || async move {
            // 32 calls answered with an error status, in flight together.
            let calls: Vec<_> = (0..32)
                .map(|i| {
                    let c = statuses.clone();
                    let code = codes[i % codes.len()];
                    tokio::spawn(async move {
                        c.call_tool("http_status", args(json!({"code": code})))
                            .await
                    })
                })
                .collect();
            for call in calls {
                let e = call.await.unwrap().unwrap_err();
                assert_fault_error("HTTP 4xx/5xx", &e);
            }
            release(&releaser, "HTTP 4xx/5xx").await;
        },
    )
    .await;
    t.recovered = recover(&client, "HTTP 4xx/5xx", &state).await;
    assert_eq!(
        state.counter("http_status"),
        32,
        "an answered-with-an-error call was sent again"
    );
    // The 32 calls answered with an error status ran once each.
    t.calls += 32;
    t.failed_ran += 32;
    client.close().await;
    drop(server);
    t
}

async fn restarted_mid_stream() -> Tally {
    let state = StateDir::new();
    let mut server = tokio::task::block_in_place(|| HttpServer::spawn(with_hold(&state)));
    let client = connect("restarted", fast_reconnect(http_cfg(server.url()))).await;
    let server_ref = &mut server;
    let mut t = matrix_row(
        "restarted mid-stream",
        &client,
        &state,
        false,
        Duration::from_secs(60),
        || async move { tokio::task::block_in_place(|| server_ref.restart()) },
    )
    .await;
    t.recovered = recover(&client, "restarted mid-stream", &state).await;
    assert_eq!(state.starts(), 2);
    client.close().await;
    t
}

fn check(t: &Tally) {
    assert_eq!(t.lost, 0, "{}: acknowledged results lost", t.fault);
    assert_eq!(t.twice, 0, "{}: mutations run twice", t.fault);
    assert_eq!(t.recovered, HELD + MUTATIONS, "{}", t.fault);
}

fn print(rows: &[Tally]) {
    let mut out = format!(
        "\nfault matrix ({HELD} held + {MUTATIONS} mutations in flight; HTTP 4xx/5xx adds 32 calls answered with an error status)\n"
    );
    out.push_str(&header());
    out.push('\n');
    for t in rows {
        out.push_str(&t.row());
        out.push('\n');
    }
    let lost: usize = rows.iter().map(|t| t.lost).sum();
    let twice: usize = rows.iter().map(|t| t.twice).sum();
    out.push_str(&format!(
        "acknowledged results lost: {lost}, mutations run twice: {twice}\n"
    ));
    // The figures are this test's output.
    #[allow(clippy::print_stdout)]
    {
        println!("{out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_matrix_loses_no_acknowledged_result_and_runs_no_mutation_twice() {
    let mut rows = Vec::new();
    macro_rules! timed {
        ($fault:expr) => {{
            let start = std::time::Instant::now();
            let mut t = $fault.await;
            t.seconds = start.elapsed().as_secs_f64();
            rows.push(t);
        }};
    }
    timed!(killed());
    timed!(crash_looped());
    timed!(hung());
    timed!(malformed_frames());
    timed!(http_statuses());
    timed!(restarted_mid_stream());
    print(&rows);
    for t in &rows {
        check(t);
    }
}
