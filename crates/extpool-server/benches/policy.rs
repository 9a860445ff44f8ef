//! The view policy's cost. A call resolves its name in the session's
//! compiled table (O(1)), so the number of upstream tools must not change
//! what a call costs: `tools/call` through the gateway (in this process,
//! rmcp's streamable HTTP client, sequential and with 32 calls in flight)
//! with an upstream of 10 tools and of 5,000 (the testkit's
//! `--tools-file`), on the gateway-wide endpoint and on a durable session's
//! (its grants in its table); the 5,000-tool figure should stay at or
//! above 0.9× the 10-tool one. Then the time to compile a session's table
//! after a grant change, over 50 servers × 100 tools.
//!
//! Run: `cargo bench -p extpool-server --bench policy` (or every benchmark
//! with `scripts/bench.sh`). Knobs: `EXTPOOL_BENCH_SEQ` (2000 sequential
//! calls), `EXTPOOL_BENCH_CONC` (10000 calls, 32 in flight),
//! `EXTPOOL_BENCH_ROUNDS` (3 rounds, each tool count once per round, the
//! best kept), `EXTPOOL_BENCH_COMPILES` (200 grant changes). Writes
//! `policy.json` to `$EXTPOOL_BENCH_OUT` when set.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::Path;
use std::time::{Duration, Instant};

use extpool_host::{Grants, Host, HostOptions, Naming, Pin, Places, ViewPolicy};
use extpool_server::{Gateway, GatewayOptions};
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};

#[path = "common/mod.rs"]
mod common;

use common::{echo_phases, env_usize, quantile_us};

const INFLIGHT: usize = 32;
const WARMUP: usize = 200;

/// A project whose one server (`bench`) serves `tools` tools `t0`, `t1`, …
fn project(dir: &Path, tools: usize) -> std::path::PathBuf {
    let definitions: Vec<Value> = (0..tools)
        .map(|i| {
            json!({
                "name": format!("t{i}"),
                "description": format!("Tool {i} of the benchmark's upstream"),
                "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
            })
        })
        .collect();
    let file = dir.join("tools.json");
    std::fs::write(&file, Value::Array(definitions).to_string()).unwrap();
    let (program, args) =
        extpool_testkit::stdio_command(["--tools-file".to_owned(), file.display().to_string()])
            .into_parts();
    let program = program.display().to_string();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let config = dir.join("extpool.yaml");
    std::fs::write(
        &config,
        format!(
            "mcp_servers:\n  bench:\n    command: {program:?}\n    args: [{}]\nskills:\n  default_roots: false\n  watch: false\n",
            args.join(", ")
        ),
    )
    .unwrap();
    config
}

async fn host(dir: &Path, config: &Path) -> Host {
    Host::start(HostOptions {
        places: Places {
            cwd: dir.to_path_buf(),
            home: Some(dir.join("home")),
            ..Places::default()
        },
        watch_skills: Some(false),
        relay: true,
        ..HostOptions::files([config.to_path_buf()])
    })
    .await
    .unwrap()
}

/// Calls/s and p50 (µs) of one phase.
fn figures(latencies: &mut [Duration], took: Duration) -> (f64, f64) {
    latencies.sort();
    (
        latencies.len() as f64 / took.as_secs_f64(),
        quantile_us(latencies, 0.5),
    )
}

/// One endpoint's figures: (sequential calls/s, p50), (concurrent calls/s, p50).
type Measured = [(f64, f64); 2];

async fn measure(url: &str, seq: usize, conc: usize) -> Measured {
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).max_concurrent_requests(64);
    let client = ().serve(StreamableHttpClientTransport::with_client(http, config)).await.unwrap();
    let args: Map<String, Value> = json!({"message": "ping"}).as_object().cloned().unwrap();
    let [mut s, mut c] = echo_phases(
        client.peer(),
        "mcp__bench__t0",
        &args,
        (WARMUP, seq, conc, INFLIGHT),
    )
    .await;
    let _ = client.cancel().await;
    [
        figures(&mut s.latencies, s.took),
        figures(&mut c.latencies, c.took),
    ]
}

/// The gateway-wide endpoint's and a durable session's figures with an
/// upstream of `tools` tools.
async fn gateway_round(tools: usize, seq: usize, conc: usize) -> [Measured; 2] {
    let dir = tempfile::tempdir().unwrap();
    let config = project(dir.path(), tools);
    let host = host(dir.path(), &config).await;
    let state = extpool_state::StateStore::open_url(&format!(
        "sqlite:{}",
        dir.path().join("state.db").display()
    ))
    .await
    .unwrap();
    let options = GatewayOptions {
        state: Some(state),
        ..GatewayOptions::default()
    };
    let gateway = Gateway::new(host, options).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let serving = gateway.clone();
    tokio::spawn(async move { serving.serve_http(listener).await });
    let created = reqwest::Client::new()
        .post(format!("{base}/v1/sessions"))
        .header("content-type", "application/json")
        .body(json!({"id": "bench"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201, "the session is created");
    let plain = measure(&format!("{base}/mcp"), seq, conc).await;
    let session = measure(&format!("{base}/sessions/bench/mcp"), seq, conc).await;
    gateway.shutdown().await;
    [plain, session]
}

/// The time to compile a table whole (a new revision), and a session's
/// after each of `rounds` grant changes, over `servers` × `tools` tools.
async fn compile_times(
    servers: usize,
    tools: usize,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("extpool.yaml");
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    std::fs::write(&config, "skills:\n  default_roots: false\n  watch: false\n").unwrap();
    let host = host(dir.path(), &config).await;
    for s in 0..servers {
        host.register(extpool_testkit::LocalSource::with_tools(
            format!("s{s}"),
            tools,
        ))
        .await
        .unwrap();
    }
    let session = host.session("bench").unwrap();
    let names: Vec<String> = session
        .tools()
        .into_iter()
        .filter(|t| !t.builtin)
        .map(|t| t.name)
        .collect();
    assert!(names.len() >= servers * tools, "{} tools", names.len());
    let base = ViewPolicy::builder()
        .naming(Naming::Client)
        .front_tools(extpool_server::source_tools::TOOLS)
        .build();
    // A table compiled whole (what a new revision costs once, for every
    // view of the policy): a fresh policy each time, so nothing is cached.
    let mut whole = Vec::with_capacity(rounds.min(50));
    for _ in 0..rounds.min(50) {
        let fresh = base.to_builder().build();
        let started = Instant::now();
        let _ = session.table(Pin::now().policy(&fresh));
        whole.push(started.elapsed());
    }
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        // Every name granted but one, a different one each time.
        let refused = &names[round % names.len()];
        let granted: std::collections::HashSet<String> =
            names.iter().filter(|n| *n != refused).cloned().collect();
        let policy = base.refine(
            Some(Grants::new(move |name| granted.contains(name))),
            Vec::new(),
        );
        session.set_policy(policy);
        let started = Instant::now();
        let table = session.table(Pin::now());
        times.push(started.elapsed());
        assert!(table.row(refused).is_none(), "{refused} is refused");
    }
    session.close().await;
    host.shutdown().await;
    (whole, times)
}

fn main() {
    let seq = env_usize("EXTPOOL_BENCH_SEQ", 2000).max(1);
    let conc = env_usize("EXTPOOL_BENCH_CONC", 10_000).max(INFLIGHT);
    let rounds = env_usize("EXTPOOL_BENCH_ROUNDS", 3).max(1);
    let compiles = env_usize("EXTPOOL_BENCH_COMPILES", 200).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let counts = [10usize, 5000];
    // Best of the rounds, the tool counts interleaved (machine drift hits both).
    let mut best: Vec<[Measured; 2]> = vec![[[(0.0, f64::MAX); 2]; 2]; counts.len()];
    for _ in 0..rounds {
        for (i, &tools) in counts.iter().enumerate() {
            let got = rt.block_on(gateway_round(tools, seq, conc));
            for (endpoint, measured) in got.iter().enumerate() {
                for (mode, &(rate, p50)) in measured.iter().enumerate() {
                    let kept = &mut best[i][endpoint][mode];
                    kept.0 = kept.0.max(rate);
                    kept.1 = kept.1.min(p50);
                }
            }
        }
    }
    println!("## gateway tools/call by upstream size (best of {rounds} rounds)\n");
    println!(
        "| endpoint | mode | 10 tools: calls/s | p50 µs | 5,000 tools: calls/s | p50 µs | 5,000 / 10 |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for (endpoint, name) in ["/mcp", "/sessions/{id}/mcp (grants)"].iter().enumerate() {
        for (mode, word) in ["sequential", "32 in flight"].iter().enumerate() {
            let (small, large) = (best[0][endpoint][mode], best[1][endpoint][mode]);
            let ratio = large.0 / small.0;
            println!(
                "| {name} | {word} | {:.0} | {:.0} | {:.0} | {:.0} | {ratio:.2} |",
                small.0, small.1, large.0, large.1
            );
            rows.push(json!({"endpoint": name, "mode": word, "small": small, "large": large, "ratio": ratio}));
        }
    }
    let (mut whole, mut times) = rt.block_on(compile_times(50, 100, compiles));
    whole.sort();
    times.sort();
    let ms = |v: &[Duration], p: f64| quantile_us(v, p) / 1000.0;
    println!("\n## a table compiled over 50 servers × 100 tools\n");
    println!("| what | runs | p50 ms | p90 ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    for (what, v) in [
        (
            "whole (a new revision, shared by every view of the policy)",
            &whole,
        ),
        ("a session's, after a grant change", &times),
    ] {
        println!(
            "| {what} | {} | {:.2} | {:.2} | {:.2} |",
            v.len(),
            ms(v, 0.5),
            ms(v, 0.9),
            ms(v, 1.0)
        );
    }
    if let Some(out) = std::env::var_os("EXTPOOL_BENCH_OUT") {
        let report = json!({
            "calls": rows,
            "compile_whole_ms": {"p50": ms(&whole, 0.5), "p90": ms(&whole, 0.9)},
            "compile_grant_change_ms": {"p50": ms(&times, 0.5), "p90": ms(&times, 0.9), "max": ms(&times, 1.0)},
        });
        let path = Path::new(&out).join("policy.json");
        std::fs::write(path, report.to_string()).unwrap();
    }
}
