//! The gateway benchmark: `tools/call echo` through extpool serve and
//! through the MCP gateways and proxies people use, all in front of the
//! same stdio upstream (the testkit server), with the same client (rmcp's
//! streamable HTTP client on a pooled reqwest client with TCP_NODELAY, 64
//! requests at once allowed), interleaved per round so machine drift
//! affects every contender alike.
//!
//! Contenders (see `gateway/contenders.rs`): the upstream straight over
//! stdio (what each hop adds is measured against it), the floor (the
//! same rmcp client straight to the testkit server's own streamable HTTP
//! transport: the cost of one HTTP hop with nothing behind it), extpool's
//! `Gateway::serve_http` in its own process (what `extpool serve` runs),
//! `supergateway` and `mcp-proxy` from npm, a 30-line proxy on the
//! TypeScript SDK, `mcp-proxy` and FastMCP's `as_proxy` from PyPI, and
//! ContextForge's stdio bridge. Every contender process starts fresh each
//! round; each is measured sequentially and with 32 calls in flight.
//!
//! Prints a Markdown table (medians over rounds, min–max, p50/p99, p50
//! added over direct stdio) and the targets of issue 10, and writes every
//! sample to `$EXTPOOL_BENCH_OUT/gateway.json` (default `target/bench`).
//!
//! Run: `scripts/peers.sh --bench` once (the benchmark-only peers), then
//! `cargo bench -p extpool-server --bench gateway`, or all benchmarks with
//! `scripts/bench.sh`. A missing peer fails the run; leave it out with
//! `EXTPOOL_BENCH_ONLY`. Knobs: `EXTPOOL_BENCH_ROUNDS` (3),
//! `EXTPOOL_BENCH_SEQ` (1000), `EXTPOOL_BENCH_CONC` (5000),
//! `EXTPOOL_BENCH_ONLY` (keys, e.g. `stdio,floor,extpool,supergateway`),
//! `EXTPOOL_BENCH_VERBOSE` (show the contenders' output).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde::Serialize;
use serde_json::{Map, Value, json};

#[path = "common/mod.rs"]
mod common;
#[path = "gateway/contenders.rs"]
mod contenders;
#[path = "gateway/report.rs"]
mod report;

use common::{echo_phases, env_usize, quantile_us};
use contenders::Contender;

/// Calls in flight in the concurrent phase (the figure).
pub const INFLIGHT: usize = 32;
const WARMUP: usize = 200;

/// One measured phase of one contender in one round.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub round: usize,
    pub contender: &'static str,
    pub peer: bool,
    pub mode: &'static str,
    pub inflight: usize,
    pub calls: usize,
    pub calls_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Latency at 0, 1, …, 100 %.
    pub percentiles_us: Vec<f64>,
}

fn sample(
    round: usize,
    c: Contender,
    inflight: usize,
    mut lat: Vec<Duration>,
    t: Duration,
) -> Sample {
    lat.sort();
    let q = |p: f64| quantile_us(&lat, p);
    Sample {
        round,
        contender: c.name(),
        peer: c.is_peer(),
        mode: if inflight == 1 {
            "sequential"
        } else {
            "concurrent"
        },
        inflight,
        calls: lat.len(),
        calls_per_sec: lat.len() as f64 / t.as_secs_f64(),
        p50_us: q(0.5),
        p99_us: q(0.99),
        percentiles_us: (0..=100).map(|p| q(f64::from(p) / 100.0)).collect(),
    }
}

type Client = RunningService<RoleClient, ()>;

/// The one client: rmcp over streamable HTTP, pooled, TCP_NODELAY.
async fn connect_http(url: &str) -> Client {
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).max_concurrent_requests(64);
    let transport = StreamableHttpClientTransport::with_client(http, config);
    ().serve(transport)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
}

async fn connect_stdio() -> Client {
    let (program, args) = contenders::upstream();
    let command = extpool_testkit::StdioCommand { program, args };
    extpool_testkit::client::connect_stdio(&command)
        .await
        .expect("starting the testkit server")
}

/// The name the contender gives the upstream's `echo` (extpool namespaces it).
async fn echo_name(client: &Client) -> String {
    let tools = client.peer().list_all_tools().await.unwrap();
    tools
        .iter()
        .map(|t| t.name.to_string())
        .find(|n| n == "echo" || n.ends_with("__echo"))
        .unwrap_or_else(|| panic!("no echo tool among {} tools", tools.len()))
}

async fn measure(
    round: usize,
    c: Contender,
    client: &Client,
    seq: usize,
    conc: usize,
) -> [Sample; 2] {
    let name = echo_name(client).await;
    let args: Map<String, Value> = json!({"message": "ping"}).as_object().cloned().unwrap();
    let [sequential, concurrent] =
        echo_phases(client.peer(), &name, &args, (WARMUP, seq, conc, INFLIGHT)).await;
    [
        sample(round, c, 1, sequential.latencies, sequential.took),
        sample(round, c, INFLIGHT, concurrent.latencies, concurrent.took),
    ]
}

async fn run_one(
    round: usize,
    c: Contender,
    config: &Path,
    seq: usize,
    conc: usize,
) -> [Sample; 2] {
    let served = contenders::start(c, config);
    let client = match &served {
        None => connect_stdio().await,
        Some(s) => connect_http(&s.url).await,
    };
    let samples = measure(round, c, &client, seq, conc).await;
    let _ = client.cancel().await;
    drop(served);
    samples
}

fn main() {
    if let Some(config) = std::env::var_os(contenders::GATEWAY_CONFIG_ENV) {
        let port = env_usize(contenders::GATEWAY_PORT_ENV, 0) as u16;
        contenders::run_gateway(Path::new(&config), port);
    }
    let rounds = env_usize("EXTPOOL_BENCH_ROUNDS", 3).max(1);
    let seq = env_usize("EXTPOOL_BENCH_SEQ", 1000).max(1);
    let conc = env_usize("EXTPOOL_BENCH_CONC", 5000).max(INFLIGHT);
    let only = std::env::var("EXTPOOL_BENCH_ONLY").ok();
    let wanted: Vec<Contender> = contenders::ALL
        .into_iter()
        .filter(|c| {
            only.as_ref()
                .is_none_or(|o| o.split(',').any(|k| k.trim() == c.key()))
        })
        .collect();
    let out_dir = std::env::var_os("EXTPOOL_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench"));
    let project = tempfile::tempdir().unwrap();
    let config = contenders::gateway_project(project.path());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let load_start = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut samples: Vec<Sample> = Vec::new();
    rt.block_on(async {
        for round in 0..rounds {
            for &c in &wanted {
                let t = Instant::now();
                samples.extend(run_one(round, c, &config, seq, conc).await);
                eprintln!(
                    "gateway bench: round {round} {} done in {:.1?}",
                    c.name(),
                    t.elapsed()
                );
            }
        }
    });
    let load_end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let first3 = |s: &str| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let machine = format!(
        "{} cores, load average {} at the start, {} at the end; {rounds} rounds, {WARMUP} warm-up + {seq} sequential + {conc} calls at {INFLIGHT} in flight per contender and round",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        first3(&load_start),
        first3(&load_end),
    );
    let markdown = report::markdown(&samples, &wanted, &machine);
    println!("{markdown}");
    std::fs::create_dir_all(&out_dir).unwrap();
    let json = json!({"machine": machine, "samples": samples});
    std::fs::write(
        out_dir.join("gateway.json"),
        serde_json::to_vec_pretty(&json).unwrap(),
    )
    .unwrap();
    std::fs::write(out_dir.join("gateway.md"), markdown).unwrap();
    println!("samples: {}", out_dir.join("gateway.json").display());
}
