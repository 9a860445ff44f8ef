//! The streamable HTTP client's cost: `tools/call echo` against the testkit
//! server's streamable HTTP transport, interleaved per round.
//!
//! Clients: `McpServerCap` through the pool with idle connections kept for
//! reuse (`HttpSettings::keep_alive`, the default) and without (a new TCP
//! connection per request, what the pool did before), rmcp's own default
//! client (`StreamableHttpClientTransport::from_uri`: no connection reuse)
//! and rmcp on a pooled `reqwest` client with `TCP_NODELAY` (the gateway
//! benchmark's client). Servers: the testkit server with `TCP_NODELAY`
//! (what extpool's gateway and the testkit set) and with Nagle's algorithm
//! left on (`--nagle`: a plain `axum::serve`), where a reused connection
//! meets the delayed-ACK stall (about 40 ms per response on Linux).
//!
//! Each run gets a fresh server process; each contender runs sequentially
//! and with 32 calls in flight; client CPU µs per call is this process's
//! user + system time over the calls.
//!
//! Run: `cargo bench -p extpool-mcp --bench http_client`. Knobs:
//! `EXTPOOL_BENCH_ROUNDS` (3), `EXTPOOL_BENCH_SEQ` (1000),
//! `EXTPOOL_BENCH_CONC` (5000), `EXTPOOL_BENCH_NAGLE_SEQ` (50: calls per
//! sequential phase against the Nagle server, where reuse costs ~40 ms a
//! call).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use extpool_core::McpResource;
use extpool_mcp::{McpServerCap, McpServerConfig, PoolConfig, SessionConnectionPool};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde::Serialize;
use serde_json::{Map, Value, json};

#[allow(dead_code)]
#[path = "common/measure.rs"]
mod measure;

use measure::{Phase, Run, Sizes, env_usize, measure};

const INFLIGHT: usize = 32;

/// One figure of a phase (calls/s, a latency, CPU per call).
type Figure = fn(&Phase) -> f64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Client {
    CapReuse,
    CapFresh,
    RmcpDefault,
    RmcpPooled,
}

const CLIENTS: [Client; 4] = [
    Client::CapReuse,
    Client::CapFresh,
    Client::RmcpDefault,
    Client::RmcpPooled,
];

impl Client {
    fn label(self) -> &'static str {
        match self {
            Self::CapReuse => "McpServerCap, connections reused",
            Self::CapFresh => "McpServerCap, a connection per request",
            Self::RmcpDefault => "rmcp default client (no reuse)",
            Self::RmcpPooled => "rmcp on a pooled reqwest client",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Server {
    NoDelay,
    Nagle,
}

impl Server {
    fn label(self) -> &'static str {
        match self {
            Self::NoDelay => "testkit HTTP, TCP_NODELAY",
            Self::Nagle => "testkit HTTP, Nagle on",
        }
    }

    fn spawn(self) -> extpool_testkit::HttpServer {
        match self {
            Self::NoDelay => extpool_testkit::HttpServer::start(),
            Self::Nagle => extpool_testkit::HttpServer::spawn(["--nagle"]),
        }
    }
}

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

fn echo_args() -> Map<String, Value> {
    json!({"message": "ping"}).as_object().cloned().unwrap()
}

async fn cap(url: &str, keep_alive: bool, sizes: Sizes) -> Run {
    let mut config = PoolConfig::default();
    config.client.http.keep_alive = keep_alive;
    let pool = SessionConnectionPool::new(config);
    let cap =
        Arc::new(McpServerCap::new("bench", McpServerConfig::http(url), pool.clone()).unwrap());
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

async fn rmcp(url: &str, pooled: bool, sizes: Sizes) -> Run {
    let transport = if pooled {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .build()
            .unwrap();
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
            .max_concurrent_requests(64);
        StreamableHttpClientTransport::with_client(http, config)
    } else {
        StreamableHttpClientTransport::from_uri(url.to_owned())
    };
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
    let _ = client.cancel().await;
    run
}

async fn run(client: Client, url: &str, sizes: Sizes) -> Run {
    match client {
        Client::CapReuse => cap(url, true, sizes).await,
        Client::CapFresh => cap(url, false, sizes).await,
        Client::RmcpDefault => rmcp(url, false, sizes).await,
        Client::RmcpPooled => rmcp(url, true, sizes).await,
    }
}

/// Median, min and max.
fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn cell(samples: &[Sample], server: Server, client: Client, mode: &str, f: Figure) -> String {
    let v: Vec<f64> = samples
        .iter()
        .filter(|s| s.server == server.label() && s.client == client.label() && s.mode == mode)
        .map(|s| f(&s.phase))
        .collect();
    if v.is_empty() {
        return "–".into();
    }
    let (m, lo, hi) = stats(v);
    format!("{m:.0} ({lo:.0}–{hi:.0})")
}

/// Per-round ratio of two contenders' figures, median (min–max).
fn ratio(
    samples: &[Sample],
    server: Server,
    a: Client,
    b: Client,
    mode: &str,
    f: Figure,
) -> Option<(f64, f64, f64)> {
    let rounds = samples.iter().map(|s| s.round).max()? + 1;
    let value = |c: Client, r: usize| {
        samples
            .iter()
            .find(|s| {
                s.round == r
                    && s.server == server.label()
                    && s.client == c.label()
                    && s.mode == mode
            })
            .map(|s| f(&s.phase))
    };
    let v: Vec<f64> = (0..rounds)
        .filter_map(|r| Some(value(a, r)? / value(b, r)?))
        .collect();
    (!v.is_empty()).then(|| stats(v))
}

fn markdown(samples: &[Sample], machine: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "#### Streamable HTTP client (`tools/call echo`, testkit HTTP server)\n"
    );
    let _ = writeln!(md, "{machine}. Medians over rounds, (min–max).\n");
    let _ = writeln!(
        md,
        "| server | client | mode | calls/s | p50 µs | p99 µs | client CPU µs/call |"
    );
    let _ = writeln!(md, "|---|---|---|---:|---:|---:|---:|");
    for server in [Server::NoDelay, Server::Nagle] {
        for client in CLIENTS {
            for mode in ["sequential", "concurrent"] {
                let any = samples.iter().any(|s| {
                    s.server == server.label() && s.client == client.label() && s.mode == mode
                });
                if !any {
                    continue;
                }
                let label = if mode == "sequential" {
                    "sequential".to_owned()
                } else {
                    format!("{INFLIGHT} in flight")
                };
                let _ = writeln!(
                    md,
                    "| {} | {} | {label} | {} | {} | {} | {} |",
                    server.label(),
                    client.label(),
                    cell(samples, server, client, mode, |p| p.calls_per_sec),
                    cell(samples, server, client, mode, |p| p.p50_us),
                    cell(samples, server, client, mode, |p| p.p99_us),
                    cell(samples, server, client, mode, |p| p.cpu_us_per_call),
                );
            }
        }
    }
    let _ = writeln!(
        md,
        "\n#### Connection reuse: before (a connection per request) and after (reused), per-round ratios\n"
    );
    let _ = writeln!(md, "| server | figure | reused ÷ per request |");
    let _ = writeln!(md, "|---|---|---:|");
    let rows: [(&str, &str, Figure); 4] = [
        ("calls/s, sequential", "sequential", |p| p.calls_per_sec),
        ("calls/s, 32 in flight", "concurrent", |p| p.calls_per_sec),
        ("p50 latency, sequential", "sequential", |p| p.p50_us),
        ("client CPU per call, 32 in flight", "concurrent", |p| {
            p.cpu_us_per_call
        }),
    ];
    for server in [Server::NoDelay, Server::Nagle] {
        for (what, mode, f) in rows {
            if let Some((m, lo, hi)) =
                ratio(samples, server, Client::CapReuse, Client::CapFresh, mode, f)
            {
                let _ = writeln!(
                    md,
                    "| {} | {what} | {m:.2}× ({lo:.2}–{hi:.2}) |",
                    server.label()
                );
            }
        }
    }
    md
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let rounds = env_usize("EXTPOOL_BENCH_ROUNDS", 3).max(1);
    let sizes = Sizes {
        warmup: 100,
        seq: env_usize("EXTPOOL_BENCH_SEQ", 1000).max(1),
        conc: env_usize("EXTPOOL_BENCH_CONC", 5000).max(INFLIGHT),
        inflight: INFLIGHT,
    };
    let nagle_seq = env_usize("EXTPOOL_BENCH_NAGLE_SEQ", 50).max(1);
    let nagle_sizes = Sizes {
        warmup: 5,
        seq: nagle_seq,
        conc: nagle_seq * INFLIGHT,
        inflight: INFLIGHT,
    };
    let out_dir = std::env::var_os("EXTPOOL_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench"));
    let load_start = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut samples = Vec::new();
    rt.block_on(async {
        for round in 0..rounds {
            for server in [Server::NoDelay, Server::Nagle] {
                for client in CLIENTS {
                    let s = if server == Server::Nagle {
                        nagle_sizes
                    } else {
                        sizes
                    };
                    let spawned = server.spawn();
                    let r = run(client, spawned.url(), s).await;
                    drop(spawned);
                    for (mode, inflight, phase) in [
                        ("sequential", 1, r.sequential),
                        ("concurrent", INFLIGHT, r.concurrent),
                    ] {
                        samples.push(Sample {
                            round,
                            server: server.label(),
                            client: client.label(),
                            mode,
                            inflight,
                            phase,
                        });
                    }
                }
            }
        }
    });
    let first3 = |s: &str| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let load_end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let machine = format!(
        "{} cores, load average {} at the start, {} at the end; {rounds} rounds; {} sequential + {} calls at {INFLIGHT} in flight per run ({} + {} against the Nagle server)",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        first3(&load_start),
        first3(&load_end),
        sizes.seq,
        sizes.conc,
        nagle_sizes.seq,
        nagle_sizes.conc,
    );
    let md = markdown(&samples, &machine);
    println!("{md}");
    std::fs::create_dir_all(&out_dir).unwrap();
    let json = json!({"machine": machine, "samples": samples});
    std::fs::write(
        out_dir.join("http_client.json"),
        serde_json::to_vec_pretty(&json).unwrap(),
    )
    .unwrap();
    std::fs::write(out_dir.join("http_client.md"), md).unwrap();
    println!("samples: {}", out_dir.join("http_client.json").display());
}
