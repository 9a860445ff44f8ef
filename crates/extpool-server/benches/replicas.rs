//! The scale-out benchmark, in two parts, each interleaved per round so
//! machine drift affects both sides alike.
//!
//! 1. **State store latency, SQLite vs PostgreSQL**: session create and
//!    refresh, p50/p99, through the gateway's HTTP API (`POST /v1/sessions`,
//!    `POST /v1/sessions/{id}/mcp-refresh`: request, reconciliation cycle,
//!    transaction, answer — what an operator or a model sees) and through
//!    the `StateStore` alone (a create granting 50 names; a refresh
//!    granting one new name). SQLite is a file with `synchronous=FULL`;
//!    PostgreSQL is a local server with `fsync` on, reached over its Unix
//!    socket — both flush every commit. The API refresh runs its cycle at
//!    once (no coalescing window): its p50 is checked against 10 ms and
//!    compared with the figure before (`EXTPOOL_BENCH_REFRESH_BEFORE_MS`).
//! 2. **Calls/s through two replicas vs one**: `extpool serve`'s gateway in
//!    one or two processes sharing one PostgreSQL store, each with its own
//!    stdio upstream (the testkit server), behind the same round-robin
//!    balancer, called by the same client (rmcp's streamable HTTP client,
//!    one session-era session, so every other call is served by the other
//!    replica, which resumed the session) — sequentially and with 32 calls
//!    in flight.
//!
//! Run: `cargo bench -p extpool-server --bench replicas` (it starts its own
//! PostgreSQL: Debian's `postgresql`, as the tests use). Knobs:
//! `EXTPOOL_BENCH_ROUNDS` (3), `EXTPOOL_BENCH_OPS` (300 creates and
//! refreshes per backend and round), `EXTPOOL_BENCH_SEQ` (1000),
//! `EXTPOOL_BENCH_CONC` (5000). Prints Markdown tables; writes every sample
//! to `$EXTPOOL_BENCH_OUT/replicas.json` (default `target/bench`).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

#[path = "replicas/calls.rs"]
mod calls;
#[path = "common/mod.rs"]
mod common;
#[path = "replicas/store.rs"]
mod store;

use common::{env_usize, quantile_us};

/// Latencies of one measured operation.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub round: usize,
    /// What was measured (`"api create"`, `"calls sequential"`, …).
    pub what: String,
    /// Which side (`"sqlite"`, `"postgres"`, `"1 replica"`, `"2 replicas"`).
    pub side: String,
    pub ops: usize,
    pub ops_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

impl Sample {
    pub fn new(
        round: usize,
        what: &str,
        side: &str,
        mut lat: Vec<Duration>,
        total: Duration,
    ) -> Self {
        lat.sort();
        let q = |p: f64| quantile_us(&lat, p);
        Sample {
            round,
            what: what.to_owned(),
            side: side.to_owned(),
            ops: lat.len(),
            ops_per_sec: lat.len() as f64 / total.as_secs_f64(),
            p50_us: q(0.5),
            p99_us: q(0.99),
        }
    }
}

/// The median of `xs`.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// A Markdown table: per measurement and side, medians over rounds.
fn table(samples: &[Sample], sides: [&str; 2], ratio_of: &str) -> String {
    let mut whats: Vec<&str> = samples.iter().map(|s| s.what.as_str()).collect();
    whats.dedup();
    whats.sort();
    whats.dedup();
    let mut out = format!(
        "| measurement | {a} p50 | {a} p99 | {a} ops/s | {b} p50 | {b} p99 | {b} ops/s | {b} / {a} ({ratio_of}), per round: median (min–max) |\n|---|---|---|---|---|---|---|---|\n",
        a = sides[0],
        b = sides[1],
    );
    for what in whats {
        let pick = |side: &str, f: fn(&Sample) -> f64| {
            median(
                samples
                    .iter()
                    .filter(|s| s.what == what && s.side == side)
                    .map(f)
                    .collect(),
            )
        };
        let (a50, a99, aops) = (
            pick(sides[0], |s| s.p50_us),
            pick(sides[0], |s| s.p99_us),
            pick(sides[0], |s| s.ops_per_sec),
        );
        let (b50, b99, bops) = (
            pick(sides[1], |s| s.p50_us),
            pick(sides[1], |s| s.p99_us),
            pick(sides[1], |s| s.ops_per_sec),
        );
        // The ratio within each round (both sides measured back to back),
        // then its median and spread over rounds.
        let of = |s: &Sample| {
            if ratio_of == "ops/s" {
                s.ops_per_sec
            } else {
                s.p50_us
            }
        };
        let mut ratios: Vec<f64> = samples
            .iter()
            .filter(|a| a.what == what && a.side == sides[0])
            .filter_map(|a| {
                samples
                    .iter()
                    .find(|b| b.what == what && b.side == sides[1] && b.round == a.round)
                    .map(|b| of(b) / of(a))
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        let (lo, hi) = (
            ratios.first().copied().unwrap_or(0.0),
            ratios.last().copied().unwrap_or(0.0),
        );
        let ratio = median(ratios);
        out.push_str(&format!(
            "| {what} | {} | {} | {aops:.0} | {} | {} | {bops:.0} | {ratio:.2}× ({lo:.2}–{hi:.2}) |\n",
            us(a50),
            us(a99),
            us(b50),
            us(b99),
        ));
    }
    out
}

/// The refresh through the API (`POST /v1/sessions/{id}/mcp-refresh`)
/// per backend: p50 and p99 (medians over rounds) against the target, and
/// against the figure of the loop that made every refresh wait for its
/// coalescing window (`EXTPOOL_BENCH_REFRESH_BEFORE_MS`, by default the
/// 106 ms measured then).
fn refresh_summary(samples: &[Sample]) -> String {
    let before_ms = std::env::var("EXTPOOL_BENCH_REFRESH_BEFORE_MS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(106.0);
    let mut out = String::from(
        "### Refresh through the API\n\n| backend | p50 | p99 | p50 ≤ 10 ms | before / now (p50) |\n|---|---|---|---|---|\n",
    );
    for side in ["sqlite", "postgres"] {
        let pick = |f: fn(&Sample) -> f64| {
            median(
                samples
                    .iter()
                    .filter(|s| s.what == "api refresh" && s.side == side)
                    .map(f)
                    .collect(),
            )
        };
        let (p50, p99) = (pick(|s| s.p50_us), pick(|s| s.p99_us));
        let met = if p50 <= 10_000.0 { "yes" } else { "no" };
        let ratio = before_ms * 1000.0 / p50.max(1.0);
        out.push_str(&format!(
            "| {side} | {} | {} | {met} | {before_ms:.0} ms / {} = {ratio:.1}× |\n",
            us(p50),
            us(p99),
            us(p50),
        ));
    }
    out
}

/// Microseconds as `812 µs` or `3.41 ms`.
fn us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{v:.0} µs")
    }
}

fn main() {
    if let Some(state) = std::env::var_os(calls::REPLICA_STATE_ENV) {
        calls::run_replica(&state.to_string_lossy());
    }
    let rounds = env_usize("EXTPOOL_BENCH_ROUNDS", 3).max(1);
    let ops = env_usize("EXTPOOL_BENCH_OPS", 300).max(10);
    let seq = env_usize("EXTPOOL_BENCH_SEQ", 1000).max(1);
    let conc = env_usize("EXTPOOL_BENCH_CONC", 5000).max(calls::INFLIGHT);
    let out_dir = std::env::var_os("EXTPOOL_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench"));
    let load_start = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let pg = extpool_testkit::postgres::PgServer::start_durable();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (store_samples, call_samples) = rt.block_on(async {
        let store_samples = store::run(&pg, rounds, ops).await;
        let call_samples = calls::run(&pg, rounds, seq, conc).await;
        (store_samples, call_samples)
    });
    let load_end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let first3 = |s: &str| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let machine = format!(
        "{} cores, load average {} at the start, {} at the end; {rounds} rounds; {ops} creates and refreshes per backend and round; {seq} sequential and {conc} concurrent ({} in flight) calls per topology and round",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        first3(&load_start),
        first3(&load_end),
        calls::INFLIGHT,
    );
    let markdown = format!(
        "### State store: SQLite vs PostgreSQL\n\n{}\n{}\n### Calls through the balancer: one replica vs two\n\n{}\n{machine}\n",
        table(&store_samples, ["sqlite", "postgres"], "p50"),
        refresh_summary(&store_samples),
        table(&call_samples, ["1 replica", "2 replicas"], "ops/s"),
    );
    println!("{markdown}");
    std::fs::create_dir_all(&out_dir).unwrap();
    let json = json!({"machine": machine, "store": store_samples, "calls": call_samples});
    std::fs::write(
        out_dir.join("replicas.json"),
        serde_json::to_vec_pretty(&json).unwrap(),
    )
    .unwrap();
    std::fs::write(out_dir.join("replicas.md"), markdown).unwrap();
    println!("samples: {}", out_dir.join("replicas.json").display());
}
