//! Client and server cost of `tools/call echo` over stdio, interleaved per
//! round so machine drift affects every contender alike.
//!
//! Clients: (a) a raw rmcp client (rmcp's own child-process transport),
//! (b) `McpServerCap::call_tool` through the `SessionConnectionPool`
//! (extpool's transport), the TypeScript SDK client and the Python SDK
//! client (`benches/peers/`). Servers: `extpool-raw-echo` (hand-written,
//! no SDK: the floor), the testkit server on extpool's stdio transport,
//! and the same server on rmcp's stdio transport (`--rmcp-stdio`: the
//! server as it was). Each run gets a fresh server process.
//!
//! Per round: every (server, client) pair sequentially and with 64 in
//! flight, then (b), (a) and TypeScript against the raw echo server at
//! 1…256 in flight. Prints a Markdown table (medians, min–max, ratios,
//! targets) and writes every sample to `$EXTPOOL_BENCH_OUT/throughput.json`
//! (default `target/bench`), from which `extpool-bench-report` draws charts.
//!
//! Run: `cargo bench -p extpool-mcp --bench throughput` (release; peers
//! from `scripts/peers.sh`, a missing peer fails the run), or the whole
//! suite with `scripts/bench.sh`. Knobs: `EXTPOOL_BENCH_ROUNDS` (3),
//! `EXTPOOL_BENCH_SEQ` (3000), `EXTPOOL_BENCH_CONC` (20000),
//! `EXTPOOL_BENCH_SWEEP` (5000 calls per in-flight level; 0 skips the
//! sweep), `EXTPOOL_BENCH_PY_SCALE` (10: Python does 1/10 of the calls),
//! `EXTPOOL_BENCH_ONLY` (clients, e.g. `raw,cap`), `EXTPOOL_BENCH_RT`
//! (`multi` or `current` client runtime), `EXTPOOL_BENCH_DRIVER` (`on`, the
//! default, or `off`: whether `McpServerCap`'s stdio connections get a
//! thread of their own on the multi-thread runtime, `ClientOptions::stdio_driver`).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use extpool_core::McpResource;
use extpool_mcp::{McpServerCap, McpServerConfig, PoolConfig, SessionConnectionPool};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde::Serialize;
use serde_json::{Map, Value, json};

const INFLIGHT: usize = 64;
const SWEEP: [usize; 5] = [1, 4, 16, 64, 256];

/// One measured phase of one contender in one round.
#[derive(Debug, Clone, Serialize)]
struct Sample {
    round: usize,
    server: &'static str,
    client: &'static str,
    mode: &'static str,
    inflight: usize,
    #[serde(flatten)]
    phase: Phase,
}

#[path = "common/measure.rs"]
mod measure;

use measure::{Phase, Run, Sizes, env_usize, measure};

fn echo_args() -> Map<String, Value> {
    json!({"message": "ping"}).as_object().cloned().unwrap()
}

/// A server to measure against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    RawEcho,
    Testkit,
    TestkitRmcp,
}

impl Server {
    fn name(self) -> &'static str {
        match self {
            Self::RawEcho => "raw-echo",
            Self::Testkit => "testkit",
            Self::TestkitRmcp => "testkit-rmcp-stdio",
        }
    }

    fn command(self) -> (PathBuf, Vec<&'static str>) {
        match self {
            Self::RawEcho => (extpool_testkit::raw_echo_binary().to_path_buf(), vec![]),
            Self::Testkit => (
                extpool_testkit::server_binary().to_path_buf(),
                vec!["--transport", "stdio"],
            ),
            Self::TestkitRmcp => (
                extpool_testkit::server_binary().to_path_buf(),
                vec!["--transport", "stdio", "--rmcp-stdio"],
            ),
        }
    }
}

async fn raw_rmcp(server: Server, sizes: Sizes) -> Run {
    let (path, args) = server.command();
    let mut cmd = tokio::process::Command::new(path);
    cmd.args(args);
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

async fn cap_via_pool(server: Server, sizes: Sizes) -> Run {
    let (path, args) = server.command();
    let mut config = PoolConfig::default();
    config.client.stdio_driver = driver_on();
    let pool = SessionConnectionPool::new(config);
    let cfg = McpServerConfig::stdio(path.to_string_lossy(), args);
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

/// `EXTPOOL_BENCH_DRIVER`: anything but `off` is on.
fn driver_on() -> bool {
    std::env::var("EXTPOOL_BENCH_DRIVER").as_deref() != Ok("off")
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
        .unwrap_or_else(|| panic!("{what} client printed no result: {text}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{what} output {line:?}: {e}"))
}

fn sized(cmd: &mut tokio::process::Command, sizes: Sizes, server: Server) {
    for n in [sizes.warmup, sizes.seq, sizes.conc, sizes.inflight] {
        cmd.arg(n.to_string());
    }
    let (path, args) = server.command();
    cmd.arg(path).args(args);
}

async fn typescript(server: Server, sizes: Sizes) -> Run {
    let sdk = extpool_testkit::peers::peers_dir().join("node_modules/@modelcontextprotocol/sdk");
    assert!(
        sdk.is_dir(),
        "TypeScript SDK missing at {}: run scripts/peers.sh",
        sdk.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/ts_client.mjs");
    let mut cmd = tokio::process::Command::new(extpool_testkit::peers::node());
    cmd.arg(script).arg(sdk);
    sized(&mut cmd, sizes, server);
    external(cmd, "TypeScript").await
}

async fn python(server: Server, sizes: Sizes) -> Run {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/py_client.py");
    let mut cmd = tokio::process::Command::new(extpool_testkit::peers::python());
    cmd.arg(script);
    sized(&mut cmd, sizes, server);
    external(cmd, "Python").await
}

const CLIENTS: [&str; 4] = ["cap", "raw", "ts", "py"];

fn client_label(key: &str) -> &'static str {
    match key {
        "cap" => "McpServerCap",
        "raw" => "rmcp raw",
        "ts" => "TypeScript SDK",
        _ => "Python SDK",
    }
}

async fn run_client(key: &str, server: Server, sizes: Sizes) -> Run {
    match key {
        "cap" => cap_via_pool(server, sizes).await,
        "raw" => raw_rmcp(server, sizes).await,
        "ts" => typescript(server, sizes).await,
        _ => python(server, sizes).await,
    }
}

#[path = "throughput/report.rs"]
mod report;

fn main() {
    let rt = match std::env::var("EXTPOOL_BENCH_RT").as_deref() {
        Ok("current") => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .unwrap();
    let sizes = Sizes {
        warmup: 200,
        seq: env_usize("EXTPOOL_BENCH_SEQ", 3000),
        conc: env_usize("EXTPOOL_BENCH_CONC", 20_000),
        inflight: INFLIGHT,
    };
    let scale = env_usize("EXTPOOL_BENCH_PY_SCALE", 10).max(1);
    let py_sizes = Sizes {
        warmup: 50,
        seq: (sizes.seq / scale).max(100),
        conc: (sizes.conc / scale).max(500),
        inflight: INFLIGHT,
    };
    let sweep_calls = env_usize("EXTPOOL_BENCH_SWEEP", 5000);
    let rounds = env_usize("EXTPOOL_BENCH_ROUNDS", 3).max(1);
    let only = std::env::var("EXTPOOL_BENCH_ONLY").unwrap_or_else(|_| CLIENTS.join(","));
    let wanted: Vec<&'static str> = CLIENTS
        .into_iter()
        .filter(|c| only.split(',').any(|o| o.trim() == *c))
        .collect();
    let out_dir = std::env::var_os("EXTPOOL_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench"));

    let mut samples: Vec<Sample> = Vec::new();
    rt.block_on(async {
        for round in 0..rounds {
            for server in [Server::RawEcho, Server::Testkit, Server::TestkitRmcp] {
                for &client in &wanted {
                    // The server before/after comparison needs one client only.
                    if server == Server::TestkitRmcp && !matches!(client, "cap" | "raw") {
                        continue;
                    }
                    let s = if client == "py" { py_sizes } else { sizes };
                    let run = run_client(client, server, s).await;
                    for (mode, inflight, phase) in [
                        ("sequential", 1, run.sequential),
                        ("concurrent", INFLIGHT, run.concurrent),
                    ] {
                        samples.push(Sample {
                            round,
                            server: server.name(),
                            client: client_label(client),
                            mode,
                            inflight,
                            phase,
                        });
                    }
                }
            }
            if sweep_calls > 0 {
                for inflight in SWEEP {
                    for &client in wanted
                        .iter()
                        .filter(|c| matches!(**c, "cap" | "raw" | "ts"))
                    {
                        // One sequential call: the peers' scripts report a phase of none as nulls.
                        let s = Sizes {
                            warmup: 200,
                            seq: 1,
                            conc: sweep_calls,
                            inflight,
                        };
                        let run = run_client(client, Server::RawEcho, s).await;
                        samples.push(Sample {
                            round,
                            server: Server::RawEcho.name(),
                            client: client_label(client),
                            mode: "sweep",
                            inflight,
                            phase: run.concurrent,
                        });
                    }
                }
            }
        }
    });
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let machine = format!(
        "{} cores, load average {} at the end; client runtime {}, stdio driver {}; {rounds} rounds, {} sequential + {} concurrent calls per run (Python 1/{scale})",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load.split_whitespace().next().unwrap_or("?"),
        std::env::var("EXTPOOL_BENCH_RT").unwrap_or_else(|_| "multi".into()),
        if driver_on() { "on" } else { "off" },
        sizes.seq,
        sizes.conc,
    );
    let markdown = report::markdown(&samples, &machine);
    println!("{markdown}");
    std::fs::create_dir_all(&out_dir).unwrap();
    let json = json!({"machine": machine, "samples": samples});
    std::fs::write(
        out_dir.join("throughput.json"),
        serde_json::to_vec_pretty(&json).unwrap(),
    )
    .unwrap();
    std::fs::write(out_dir.join("throughput.md"), markdown).unwrap();
    println!("samples: {}", out_dir.join("throughput.json").display());
}
