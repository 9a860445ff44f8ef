//! Calls per second and latency (p50/p99) of `tools/call echo` against the
//! testkit server over stdio, sequential and with 64 calls in flight, for:
//!
//! - (a) a raw rmcp client (`Peer::call_tool`),
//! - (b) `McpServerCap::call_tool` through the `SessionConnectionPool`,
//! - the TypeScript SDK client (`benches/peers/ts_client.mjs`),
//! - the Python `mcp` SDK client (`benches/peers/py_client.py`),
//!
//! each against its own fresh server process, with the ratios extpool aims
//! at: (b) ≥ 0.9 × (a), ≥ 1.5 × TypeScript and ≥ 10 × Python at 64 in flight.
//!
//! Run: `cargo bench -p extpool-mcp --bench throughput` (release build; the
//! server is built in the same profile). The peers come from
//! `scripts/peers.sh`; a missing peer fails the run. Knobs (environment):
//! `EXTPOOL_BENCH_ROUNDS` (3), `EXTPOOL_BENCH_SEQ` (3000),
//! `EXTPOOL_BENCH_CONC` (20000), `EXTPOOL_BENCH_INFLIGHT` (64),
//! `EXTPOOL_BENCH_PY_SCALE` (10: the Python client does 1/10 of the calls),
//! `EXTPOOL_BENCH_ONLY` (e.g. `raw,cap` to profile only the Rust clients),
//! `EXTPOOL_BENCH_RT` (`multi`, the default, or `current` for a
//! current-thread client runtime).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use extpool_core::McpResource;
use extpool_mcp::{McpServerCap, McpServerConfig, PoolConfig, SessionConnectionPool};
use futures::StreamExt;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde::Deserialize;
use serde_json::{Map, Value, json};

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct Phase {
    calls: usize,
    calls_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    /// CPU time (user + system) the client process spent per call: a
    /// client-side cost that a busy machine distorts far less than calls/s.
    #[serde(default)]
    cpu_us_per_call: f64,
}

/// CPU seconds (user + system) this process used so far, from
/// `/proc/self/stat` (Linux clock ticks of 10 ms; phases run for seconds).
fn process_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // After the `)`: state is field 0, utime field 11, stime field 12.
    (ticks(11) + ticks(12)) / 100.0
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct Run {
    sequential: Phase,
    concurrent: Phase,
}

fn phase(mut latencies: Vec<Duration>, elapsed: Duration, cpu: f64) -> Phase {
    latencies.sort();
    let q = |p: f64| {
        let i = ((p * latencies.len() as f64) as usize).min(latencies.len() - 1);
        latencies[i].as_secs_f64() * 1e6
    };
    Phase {
        calls: latencies.len(),
        calls_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50_us: q(0.5),
        p99_us: q(0.99),
        cpu_us_per_call: cpu * 1e6 / latencies.len() as f64,
    }
}

struct Sizes {
    warmup: usize,
    seq: usize,
    conc: usize,
    inflight: usize,
}

/// Measures `call` sequentially, then `conc` calls with `inflight` in flight.
async fn measure<F, Fut>(sizes: &Sizes, call: F) -> Run
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..sizes.warmup {
        call().await;
    }
    let mut lat = Vec::with_capacity(sizes.seq);
    let cpu = process_cpu();
    let start = Instant::now();
    for _ in 0..sizes.seq {
        let t = Instant::now();
        call().await;
        lat.push(t.elapsed());
    }
    let sequential = phase(lat, start.elapsed(), process_cpu() - cpu);

    let cpu = process_cpu();
    let start = Instant::now();
    let lat: Vec<Duration> = futures::stream::iter(0..sizes.conc)
        .map(|_| {
            let fut = call();
            async move {
                let t = Instant::now();
                fut.await;
                t.elapsed()
            }
        })
        .buffer_unordered(sizes.inflight)
        .collect()
        .await;
    let concurrent = phase(lat, start.elapsed(), process_cpu() - cpu);
    Run {
        sequential,
        concurrent,
    }
}

fn echo_args() -> Map<String, Value> {
    json!({"message": "ping"}).as_object().cloned().unwrap()
}

async fn raw_rmcp(server: &Path, sizes: &Sizes) -> Run {
    let mut cmd = tokio::process::Command::new(server);
    cmd.args(["--transport", "stdio"]).stderr(Stdio::null());
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let peer = client.peer().clone();
    let run = measure(sizes, || {
        let peer = peer.clone();
        async move {
            let params = CallToolRequestParams::new("echo").with_arguments(echo_args());
            let r = peer.call_tool(params).await.unwrap();
            assert_ne!(r.is_error, Some(true));
        }
    })
    .await;
    client.cancel().await.unwrap();
    run
}

async fn cap_via_pool(server: &Path, sizes: &Sizes) -> Run {
    let pool = SessionConnectionPool::new(PoolConfig::default());
    let cfg = McpServerConfig::stdio(server.to_string_lossy(), ["--transport", "stdio"]);
    let cap = Arc::new(McpServerCap::new("bench", cfg, pool.clone()).unwrap());
    extpool_core::Capability::start(cap.as_ref()).await.unwrap();
    let run = measure(sizes, || {
        let cap = cap.clone();
        async move {
            let r = cap.call_tool("echo", echo_args()).await.unwrap();
            assert!(!r.is_error);
        }
    })
    .await;
    pool.shutdown().await;
    run
}

fn peers_dir() -> PathBuf {
    extpool_testkit::peers::peers_dir()
}

async fn external(mut command: tokio::process::Command, what: &str) -> Run {
    let out = command
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run the {what} client: {e}"));
    assert!(out.status.success(), "{what} client failed: {}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| {
            panic!("{what} client printed no result: {text}");
        });
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{what} output {line:?}: {e}"))
}

async fn typescript(server: &Path, sizes: &Sizes) -> Run {
    let sdk = peers_dir().join("node_modules/@modelcontextprotocol/sdk");
    assert!(
        sdk.is_dir(),
        "TypeScript SDK missing at {}: run scripts/peers.sh",
        sdk.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/ts_client.mjs");
    let mut cmd = tokio::process::Command::new(extpool_testkit::peers::node());
    cmd.arg(script).arg(sdk);
    for n in [sizes.warmup, sizes.seq, sizes.conc, sizes.inflight] {
        cmd.arg(n.to_string());
    }
    cmd.arg(server).args(["--transport", "stdio"]);
    external(cmd, "TypeScript").await
}

async fn python(server: &Path, sizes: &Sizes) -> Run {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/py_client.py");
    let mut cmd = tokio::process::Command::new(extpool_testkit::peers::python());
    cmd.arg(script);
    for n in [sizes.warmup, sizes.seq, sizes.conc, sizes.inflight] {
        cmd.arg(n.to_string());
    }
    cmd.arg(server).args(["--transport", "stdio"]);
    external(cmd, "Python").await
}

fn median(mut runs: Vec<Run>) -> Option<Run> {
    let n = runs.len();
    if n == 0 {
        return None;
    }
    runs.sort_by(|a, b| {
        a.concurrent
            .calls_per_sec
            .total_cmp(&b.concurrent.calls_per_sec)
    });
    let concurrent = runs[n / 2].concurrent;
    runs.sort_by(|a, b| {
        a.sequential
            .calls_per_sec
            .total_cmp(&b.sequential.calls_per_sec)
    });
    Some(Run {
        sequential: runs[n / 2].sequential,
        concurrent,
    })
}

fn row(name: &str, mode: &str, p: &Phase) {
    println!(
        "{name:<28} {mode:<14} {:>8} {:>11.0} {:>10.1} {:>10.1} {:>12.1}",
        p.calls, p.calls_per_sec, p.p50_us, p.p99_us, p.cpu_us_per_call
    );
}

fn main() {
    let rt = match std::env::var("EXTPOOL_BENCH_RT").as_deref() {
        Ok("current") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .unwrap();
    let inflight = env_usize("EXTPOOL_BENCH_INFLIGHT", 64);
    let sizes = Sizes {
        warmup: 200,
        seq: env_usize("EXTPOOL_BENCH_SEQ", 3000),
        conc: env_usize("EXTPOOL_BENCH_CONC", 20_000),
        inflight,
    };
    let scale = env_usize("EXTPOOL_BENCH_PY_SCALE", 10).max(1);
    let py_sizes = Sizes {
        warmup: 50,
        seq: (sizes.seq / scale).max(100),
        conc: (sizes.conc / scale).max(500),
        inflight,
    };
    let rounds = env_usize("EXTPOOL_BENCH_ROUNDS", 3).max(1);
    let server = extpool_testkit::server_binary().to_path_buf();
    println!(
        "server: extpool-testkit-server (stdio), tool echo; {inflight} in flight; median of {rounds} rounds"
    );

    let only = std::env::var("EXTPOOL_BENCH_ONLY").unwrap_or_else(|_| "raw,cap,ts,py".into());
    let wanted = |k: &str| only.split(',').any(|o| o.trim() == k);
    let (mut raw, mut cap, mut ts, mut py) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    rt.block_on(async {
        for _ in 0..rounds {
            if wanted("raw") {
                raw.push(raw_rmcp(&server, &sizes).await);
            }
            if wanted("cap") {
                cap.push(cap_via_pool(&server, &sizes).await);
            }
            if wanted("ts") {
                ts.push(typescript(&server, &sizes).await);
            }
            if wanted("py") {
                py.push(python(&server, &py_sizes).await);
            }
        }
    });
    let (raw, cap, ts, py) = (median(raw), median(cap), median(ts), median(py));

    println!(
        "\n{:<28} {:<14} {:>8} {:>11} {:>10} {:>10} {:>12}",
        "client", "mode", "calls", "calls/s", "p50 µs", "p99 µs", "cpu µs/call"
    );
    let conc = format!("{inflight} in flight");
    for (name, run) in [
        ("(a) rmcp raw", &raw),
        ("(b) McpServerCap via pool", &cap),
        ("TypeScript SDK", &ts),
        ("Python mcp SDK", &py),
    ] {
        if let Some(run) = run {
            row(name, "sequential", &run.sequential);
            row(name, &conc, &run.concurrent);
        }
    }
    let r = |a: &Phase, b: &Phase| a.calls_per_sec / b.calls_per_sec;
    println!();
    let ratio = |label: &str, a: &Option<Run>, b: &Option<Run>, target: &str| {
        if let (Some(a), Some(b)) = (a, b) {
            println!(
                "{label:<16} sequential {:.2}   {conc} {:.2}   {target}",
                r(&a.sequential, &b.sequential),
                r(&a.concurrent, &b.concurrent)
            );
        }
    };
    ratio("(b)/(a)", &cap, &raw, "(target ≥ 0.90)");
    ratio(
        "(b)/TypeScript",
        &cap,
        &ts,
        "(target ≥ 1.5 at 64 in flight)",
    );
    ratio("(b)/Python", &cap, &py, "(target ≥ 10 at 64 in flight)");
    ratio("(a)/TypeScript", &raw, &ts, "");
    let cpu = |label: &str, a: &Option<Run>, b: &Option<Run>| {
        if let (Some(a), Some(b)) = (a, b) {
            println!(
                "client CPU per call, {label:<22} sequential {:.2}   {conc} {:.2}",
                b.sequential.cpu_us_per_call / a.sequential.cpu_us_per_call,
                b.concurrent.cpu_us_per_call / a.concurrent.cpu_us_per_call
            );
        }
    };
    println!();
    cpu("TypeScript ÷ (b)", &cap, &ts);
    cpu("Python ÷ (b)", &cap, &py);
    cpu("(b) ÷ (a)", &raw, &cap);
}
