//! The soak run: 100,000 calls through extpool's MCP clients while their
//! servers keep restarting, then a check that the client process is where
//! it started — open file descriptors, live tokio tasks, threads and
//! server processes flat, resident memory flat after warm-up.
//!
//! Two servers, both the testkit server: one over stdio (killed with
//! SIGKILL every `EXTPOOL_SOAK_RESTART` calls; the client reconnects and
//! re-sends read-only calls) and one over streamable HTTP (restarted on
//! the same port at the same pace, shifted by half a period). Calls go 64
//! at a time: `echo` (read-only) and `counter` (a mutation, never re-sent)
//! alternately, spread over both servers. Every call must end; calls that
//! fail because their server was restarting under them are counted, and
//! their kind checked (interrupted, unavailable, or the session a restarted
//! HTTP server no longer knows; nothing else).
//!
//! Run: `cargo bench -p extpool-mcp --bench soak` (not in CI). Knobs:
//! `EXTPOOL_SOAK_CALLS` (100000), `EXTPOOL_SOAK_RESTART` (5000),
//! `EXTPOOL_SOAK_CHECKPOINT` (10000). Prints one row per checkpoint and
//! a verdict; exits non-zero when something leaked.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use extpool_mcp::{ClientError, ClientOptions, McpClient, McpServerConfig, ServerName};
use extpool_testkit::{HttpServer, StateDir};
use serde_json::json;

const IN_FLIGHT: usize = 64;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the process holds at one moment.
#[derive(Debug, Clone, Copy)]
struct Sample {
    calls: usize,
    failed: usize,
    restarts: usize,
    fds: usize,
    tasks: usize,
    threads: usize,
    rss_kib: u64,
    servers: usize,
    seconds: f64,
}

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn status_field(name: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Server processes of this run still alive (each records its pid in its
/// state directory; a killed one is gone once reaped).
fn live_servers(states: &[&StateDir]) -> usize {
    states
        .iter()
        .flat_map(|s| s.pids())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|stat| !stat.contains(") Z "))
                .unwrap_or(false)
        })
        .count()
}

fn sample(
    calls: usize,
    failed: usize,
    restarts: usize,
    states: &[&StateDir],
    started: Instant,
) -> Sample {
    Sample {
        calls,
        failed,
        restarts,
        fds: fds(),
        tasks: tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        threads: status_field("Threads:") as usize,
        rss_kib: status_field("VmRSS:"),
        servers: live_servers(states),
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn row(s: &Sample) -> String {
    format!(
        "| {:>7} | {:>6} | {:>8} | {:>4} | {:>5} | {:>7} | {:>8.1} | {:>7} | {:>6.1} |",
        s.calls,
        s.failed,
        s.restarts,
        s.fds,
        s.tasks,
        s.threads,
        s.rss_kib as f64 / 1024.0,
        s.servers,
        s.seconds
    )
}

async fn one_call(client: McpClient, i: usize) -> Result<(), ClientError> {
    let args = |v: serde_json::Value| v.as_object().cloned();
    if i.is_multiple_of(2) {
        let r = client
            .call_tool("echo", args(json!({"message": format!("m{i}")})))
            .await?;
        let text = &r.content[0].as_text().unwrap().text;
        assert_eq!(text, &format!("m{i}"), "a result went to the wrong call");
    } else {
        client
            .call_tool("counter", args(json!({"key": format!("k{}", i % 1000)})))
            .await?;
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let total = env_usize("EXTPOOL_SOAK_CALLS", 100_000);
    let restart_every = env_usize("EXTPOOL_SOAK_RESTART", 5_000).max(IN_FLIGHT);
    let checkpoint = env_usize("EXTPOOL_SOAK_CHECKPOINT", 10_000).max(IN_FLIGHT);

    let options = Arc::new(ClientOptions {
        request_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(30),
        ..ClientOptions::default()
    });
    let stdio_state = StateDir::new();
    let http_state = StateDir::new();
    let cmd = extpool_testkit::stdio_command(stdio_state.args());
    let stdio_cfg = McpServerConfig::stdio(cmd.program.to_string_lossy(), cmd.args);
    let mut http = tokio::task::block_in_place(|| HttpServer::spawn(http_state.args()));
    let mut http_cfg = McpServerConfig::http(http.url());
    // The restarted HTTP server listens again before the restart returns;
    // a call in the gap may need a second attempt.
    http_cfg.reconnect.attempts = 3;
    http_cfg.reconnect.backoff_ms = 20;
    let stdio = McpClient::connect(
        ServerName::new("soak_stdio").unwrap(),
        stdio_cfg,
        options.clone(),
    )
    .await
    .unwrap();
    let web = McpClient::connect(ServerName::new("soak_http").unwrap(), http_cfg, options)
        .await
        .unwrap();
    let states = [&stdio_state, &http_state];

    println!(
        "soak: {total} calls, {IN_FLIGHT} in flight, a server restart every {} calls (stdio and HTTP alternately)",
        restart_every / 2
    );
    println!("| calls | failed | restarts | fds | tasks | threads | RSS MiB | servers | s |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let started = Instant::now();
    let mut samples = vec![sample(0, 0, 0, &states, started)];
    println!("{}", row(&samples[0]));
    let (mut done, mut failed, mut restarts) = (0usize, 0usize, 0usize);
    while done < total {
        let batch = IN_FLIGHT.min(total - done);
        let calls: Vec<_> = (done..done + batch)
            .map(|i| {
                let client = if i % 4 < 2 {
                    stdio.clone()
                } else {
                    web.clone()
                };
                tokio::spawn(one_call(client, i))
            })
            .collect();
        // Restart under the calls in flight: stdio at each period, HTTP
        // half a period later.
        let before = done;
        done += batch;
        if before / restart_every != done / restart_every
            && let Some(pid) = stdio.pid()
        {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            restarts += 1;
        }
        let half = restart_every / 2;
        if (before + half) / restart_every != (done + half) / restart_every {
            tokio::task::block_in_place(|| http.restart());
            restarts += 1;
        }
        for call in calls {
            match call.await.unwrap() {
                Ok(()) => {}
                Err(e) => {
                    // A restarted HTTP server no longer knows the session:
                    // the call in flight gets its 404, a new session follows.
                    let restarted = matches!(e, ClientError::SessionExpired { .. });
                    assert!(
                        e.is_interrupted() || e.is_unavailable() || restarted,
                        "a call failed for another reason than a restart: {e}"
                    );
                    failed += 1;
                }
            }
        }
        // Samples are taken between restarts (a quarter period after the
        // last one), once both clients answer: not while a reconnect or an
        // old session's teardown is still under way.
        let offset = (restart_every / 4) % checkpoint;
        if (done + checkpoint - offset) % checkpoint < batch || done == total {
            stdio.ping().await.unwrap();
            web.ping().await.unwrap();
            let s = sample(done, failed, restarts, &states, started);
            println!("{}", row(&s));
            samples.push(s);
        }
    }
    stdio.close().await;
    web.close().await;
    drop(http);

    // Flat: no count trends upward — the highest of the second half of
    // the run is no higher than the highest of the first half (after the
    // start: warm-up makes the pools, buffers and threads), and resident
    // memory grew by no more than 10% over the second half. Counts taken
    // between batches still vary with what a restart left in progress (a
    // reconnect, an old session closing), so single samples are not
    // compared.
    let warmed = &samples[1..];
    let (first, second) = warmed.split_at(warmed.len() / 2);
    let peak = |part: &[Sample], f: fn(&Sample) -> usize| part.iter().map(f).max().unwrap_or(0);
    let last = *samples.last().unwrap();
    let mid = second.first().copied().unwrap_or(last);
    let rss_growth = last.rss_kib as f64 / mid.rss_kib.max(1) as f64 - 1.0;
    let mut verdict = Vec::new();
    for (what, f) in [
        (
            "file descriptors",
            (|s: &Sample| s.fds) as fn(&Sample) -> usize,
        ),
        ("tasks", |s: &Sample| s.tasks),
        ("threads", |s: &Sample| s.threads),
        ("server processes", |s: &Sample| s.servers),
    ] {
        let (a, b) = (peak(first, f), peak(second, f));
        if b > a {
            verdict.push(format!(
                "{what}: peak {a} in the first half, {b} in the second"
            ));
        }
    }
    if rss_growth > 0.10 {
        verdict.push(format!(
            "RSS +{:.0}% over the second half",
            rss_growth * 100.0
        ));
    }
    let warm = first.first().copied().unwrap_or(last);
    let rate = total as f64 / last.seconds;
    println!(
        "\n{total} calls in {:.1} s ({rate:.0} calls/s), {restarts} server restarts, {failed} calls failed by a restart ({:.2}%); \
         RSS {:.1} MiB after warm-up, {:.1} MiB at the end ({:+.1}% over the second half)",
        last.seconds,
        failed as f64 * 100.0 / total as f64,
        warm.rss_kib as f64 / 1024.0,
        last.rss_kib as f64 / 1024.0,
        rss_growth * 100.0
    );
    if verdict.is_empty() {
        println!("flat: file descriptors, tasks, threads, server processes and RSS");
    } else {
        println!("NOT FLAT: {}", verdict.join("; "));
        std::process::exit(1);
    }
}
