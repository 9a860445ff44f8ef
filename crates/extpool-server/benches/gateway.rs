//! The gateway benchmark: `tools/call echo` through extpool serve and
//! through the MCP gateways and proxies people use, all in front of the
//! same stdio upstream, driven by one load generator that costs far less
//! per call than any of them (raw HTTP/1.1 on hyper's client connections,
//! one current-thread runtime, pre-built bodies: `gateway/loadgen.rs`),
//! interleaved per round so machine drift affects every contender alike.
//!
//! Contenders (see `gateway/contenders.rs`): two fixed-body HTTP floors
//! with no MCP at all (nginx, and a hyper server) — the load generator's
//! ceiling, printed in the same run —, the testkit server on rmcp's own
//! streamable HTTP (one HTTP hop with nothing behind it), the floor of a
//! stdio hop (axum writing each body to the upstream as a line and
//! answering with its line: no MCP logic; `gateway/hop.rs`), extpool's
//! `Gateway::serve_http` in its own process (what `extpool serve` runs),
//! also driven with 2026-07-28 requests (no session),
//! `supergateway` and `mcp-proxy` from npm, a 30-line proxy on the
//! TypeScript SDK, `mcp-proxy` and FastMCP's `as_proxy` from PyPI, and
//! ContextForge's stdio bridge. Each MCP contender runs in front of two
//! upstreams: the testkit server and the raw echo server (so that what a
//! contender costs itself shows). Every contender process starts fresh for
//! each upstream and round; one session-era session per contender, then
//! 1, 8, 32, 128 and 512 keep-alive connections with one call in flight
//! each (1 connection is the sequential figure).
//!
//! Then, on the same contender process and session, wrk (Debian's; see
//! `gateway/wrk.rs`) drives the fixed-body floors, the testkit on rmcp's
//! HTTP, the stdio hop floor and extpool in both eras at 1 and 32
//! connections with the same body and headers, every answer checked (a
//! wrong one fails the run), the contender's CPU read around each run.
//!
//! Prints Markdown tables (medians over rounds, min–max), the CPU per call
//! of the load generator, of the contender's HTTP process and of its whole
//! process tree, the context switches a call of the contender's HTTP
//! process one call at a time, the targets of the call-path issue as
//! ratios within each round; wrk's figures beside the load generator's
//! (wrk ÷ load generator within each round, where the two disagree by
//! more than 10%, wrk's ceiling against the fixed-body floors, and the
//! targets of the issue "one way in" by each generator); the memory of
//! open idle sessions with the ≤ 4 KiB target's verdict (on anonymous
//! memory) at each step. It writes every sample (`samples`, `wrk`,
//! `idle_sessions`) to `$EXTPOOL_BENCH_OUT/gateway.json` and an SVG chart
//! of calls/s against connections per upstream (default directory
//! `target/bench`).
//!
//! Run: `scripts/peers.sh --bench` once (the benchmark-only peers and
//! wrk), then
//! `cargo bench -p extpool-server --bench gateway`, or all benchmarks with
//! `scripts/bench.sh`. A missing peer fails the run; leave it out with
//! `EXTPOOL_BENCH_ONLY`. Knobs: `EXTPOOL_BENCH_ROUNDS` (2),
//! `EXTPOOL_BENCH_MS` (2000: each level's measured time; 300 ms of
//! warm-up before it), `EXTPOOL_BENCH_ONLY` (keys, e.g.
//! `nginx,fixed,floor,hop,extpool,extpool-2026,supergateway`), `EXTPOOL_BENCH_UPSTREAMS`
//! (`raw-echo,testkit`), `EXTPOOL_BENCH_IDLE` (`2000,100000`: open idle
//! MCP sessions on extpool and on the testkit's rmcp HTTP, and the memory
//! each adds; `0` skips it), `EXTPOOL_BENCH_WRK` (`0` skips the wrk pass;
//! otherwise a missing wrk fails the run; wrk runs `EXTPOOL_BENCH_MS`
//! rounded up to whole seconds), `EXTPOOL_BENCH_BEFORE` (the path of an
//! earlier build of this benchmark binary, e.g. a copy of
//! `target/release/deps/gateway-*` made at the commit before a change: its
//! gateway runs as the contender `extpool-before`, interleaved with this
//! build's in every round), `EXTPOOL_BENCH_VERBOSE` (show the
//! contenders' output).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

#[allow(dead_code)]
#[path = "common/mod.rs"]
mod common;
#[path = "gateway/contenders.rs"]
mod contenders;
#[path = "gateway/cpu.rs"]
mod cpu;
#[path = "gateway/hop.rs"]
mod hop;
#[path = "gateway/idle.rs"]
mod idle;
#[path = "gateway/loadgen.rs"]
mod loadgen;
#[path = "gateway/report.rs"]
mod report;
#[path = "gateway/wrk.rs"]
mod wrk;
#[path = "gateway/wrk_report.rs"]
mod wrk_report;

use common::{env_usize, quantile_us};
use contenders::{Contender, Upstream};
use wrk::WrkSample;

/// The allocator of `extpool serve` (crates/extpool/src/main.rs), since
/// this binary is also the gateway child it measures.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Connections the load generator drives, one call in flight on each.
pub const LEVELS: [usize; 5] = [1, 8, 32, 128, 512];
/// The level the in-flight targets are read at.
pub const INFLIGHT: usize = 32;
const WARMUP: Duration = Duration::from_millis(300);

/// One measured level of one contender in one round.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub round: usize,
    /// The upstream's key, or `none` for a floor.
    pub upstream: &'static str,
    pub contender: &'static str,
    pub peer: bool,
    pub connections: usize,
    pub calls: usize,
    /// Answers that were not a successful result.
    pub failures: usize,
    pub calls_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The load generator's CPU per call.
    pub client_cpu_us: f64,
    /// CPU per call of the contender's HTTP process alone.
    pub front_cpu_us: f64,
    /// CPU per call of the contender and its descendants (upstream included).
    pub tree_cpu_us: f64,
    /// Context switches per call of the contender's HTTP process's threads:
    /// one call at a time, each is a thread put to sleep and woken.
    pub front_switches: f64,
}

struct Level {
    run: loadgen::Run,
    front: Duration,
    tree: Duration,
    switches: u64,
}

fn sample(round: usize, upstream: &'static str, c: Contender, conns: usize, l: Level) -> Sample {
    let mut lat = l.run.latencies;
    lat.sort();
    let calls = lat.len().max(1) as f64;
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / calls;
    Sample {
        round,
        upstream,
        contender: c.name(),
        peer: c.is_peer(),
        connections: conns,
        calls: lat.len(),
        failures: l.run.failures,
        calls_per_sec: lat.len() as f64 / l.run.took.as_secs_f64(),
        p50_us: quantile_us(&lat, 0.5),
        p99_us: quantile_us(&lat, 0.99),
        client_cpu_us: per_call(l.run.client_cpu),
        front_cpu_us: per_call(l.front),
        tree_cpu_us: per_call(l.tree),
        front_switches: l.switches as f64 / calls,
    }
}

/// The wrk pass's settings: wrk's path and its `-d` in seconds.
pub struct WrkPass {
    binary: PathBuf,
    seconds: u64,
}

/// CPU of the contender's HTTP process and of its tree between `before`
/// and `after` (nginx's master only forks: its workers answer).
fn spent(
    c: Contender,
    before: (Duration, Duration),
    after: (Duration, Duration),
) -> (Duration, Duration) {
    let tree = after.1.saturating_sub(before.1);
    let front = if c == Contender::Nginx {
        tree
    } else {
        after.0.saturating_sub(before.0)
    };
    (front, tree)
}

fn run_one(
    round: usize,
    c: Contender,
    upstream: Upstream,
    config: &Path,
    length: Duration,
    wrk: Option<&WrkPass>,
) -> (Vec<Sample>, Vec<WrkSample>) {
    let served = contenders::start(c, upstream, config);
    let target = loadgen::open(served.addr, "/mcp", "echo", c.is_fixed(), c.is_stateless());
    let key = if c.is_floor() { "none" } else { upstream.key() };
    let samples = LEVELS
        .iter()
        .map(|&conns| {
            let before = cpu::of(served.pid());
            let switches_before = cpu::switches(served.pid());
            let run = loadgen::run(&target, conns, WARMUP, length);
            let after = cpu::of(served.pid());
            let switched = cpu::switches(served.pid()).saturating_sub(switches_before);
            // The warm-up's CPU is in the difference too: scale it out by
            // the share of time measured.
            let share = length.as_secs_f64() / (length + WARMUP).as_secs_f64();
            let (front, tree) = spent(c, before, after);
            let level = Level {
                run,
                front: front.mul_f64(share),
                tree: tree.mul_f64(share),
                switches: (switched as f64 * share) as u64,
            };
            sample(round, key, c, conns, level)
        })
        .collect();
    let wrk_samples = match wrk {
        Some(pass) if wrk::drives(c) => with_wrk(pass, (round, key, c), &served, &target, config),
        _ => Vec::new(),
    };
    (samples, wrk_samples)
}

/// wrk against the contender `served` (started for `round` in front of
/// upstream `key`), on `target`'s session: each of [`wrk::LEVELS`], the
/// contender's CPU read around each run. A wrong answer fails the run.
fn with_wrk(
    pass: &WrkPass,
    (round, key, c): (usize, &'static str, Contender),
    served: &contenders::Served,
    target: &loadgen::Target,
    config: &Path,
) -> Vec<WrkSample> {
    let script = config
        .parent()
        .expect("the project dir")
        .join(format!("wrk-{}.lua", c.key()));
    std::fs::write(&script, wrk::script(target)).expect("writing wrk's script");
    wrk::LEVELS
        .iter()
        .map(|&conns| {
            let before = cpu::of(served.pid());
            let (out, wrk_cpu) = wrk::run(&pass.binary, target, &script, conns, pass.seconds);
            let after = cpu::of(served.pid());
            assert!(
                out.failures == 0 && out.requests > 0,
                "wrk against {} ({key}, {conns} connections): {} of {} answers were not a successful tools/call result; the first: {}",
                c.name(),
                out.failures,
                out.requests,
                out.first_failure.as_deref().unwrap_or("(a socket error)")
            );
            let (front, tree) = spent(c, before, after);
            let per_call = |d: Duration| d.as_secs_f64() * 1e6 / out.requests as f64;
            WrkSample {
                round,
                upstream: key,
                contender: c.name(),
                connections: conns,
                seconds: pass.seconds,
                requests: out.requests,
                calls_per_sec: out.calls_per_sec,
                p50_us: out.p50_us,
                p99_us: out.p99_us,
                client_cpu_us: per_call(wrk_cpu),
                front_cpu_us: per_call(front),
                tree_cpu_us: per_call(tree),
            }
        })
        .collect()
}

fn wanted<T: Copy>(all: &[T], env: &str, key: impl Fn(T) -> &'static str) -> Vec<T> {
    let only = std::env::var(env).ok();
    all.iter()
        .copied()
        .filter(|&x| {
            only.as_ref()
                .is_none_or(|o| o.split(',').any(|k| k.trim() == key(x)))
        })
        .collect()
}

/// Memory of idle sessions, for extpool (raw echo upstream) and the
/// testkit on rmcp's HTTP: `EXTPOOL_BENCH_IDLE` steps (cumulative; default
/// `2000,100000`, the two marks; `0` to skip).
fn idle_sessions(contenders: &[Contender], config: &Path) -> Vec<idle::Step> {
    let steps: Vec<usize> = std::env::var("EXTPOOL_BENCH_IDLE")
        .unwrap_or_else(|_| "2000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .filter(|&n| n > 0)
        .collect();
    if steps.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for &c in contenders.iter().filter(|c| {
        matches!(
            c,
            Contender::Extpool | Contender::ExtpoolBefore | Contender::Floor
        )
    }) {
        let t = Instant::now();
        // The floor is the testkit server itself.
        let upstream = if c.is_floor() {
            Upstream::Testkit
        } else {
            Upstream::RawEcho
        };
        let served = contenders::start(c, upstream, config);
        out.extend(idle::measure(&served, c.name(), &steps));
        eprintln!(
            "gateway bench: idle sessions of {} in {:.1?}",
            c.name(),
            t.elapsed()
        );
    }
    out
}

fn main() {
    if let Some(config) = std::env::var_os(contenders::GATEWAY_CONFIG_ENV) {
        let port = env_usize(contenders::GATEWAY_PORT_ENV, 0) as u16;
        contenders::run_gateway(Path::new(&config), port);
    }
    if let Ok(port) = std::env::var(contenders::FIXED_PORT_ENV) {
        contenders::run_fixed(port.parse().expect("a port"));
    }
    if let Ok(port) = std::env::var(contenders::HOP_PORT_ENV) {
        let key = std::env::var(contenders::UPSTREAM_ENV).unwrap_or_default();
        let which = Upstream::of_key(&key).expect("the hop floor's upstream");
        let (program, args) = contenders::upstream(which);
        hop::run(port.parse().expect("a port"), &program, &args);
    }
    let rounds = env_usize("EXTPOOL_BENCH_ROUNDS", 2).max(1);
    let length = Duration::from_millis(env_usize("EXTPOOL_BENCH_MS", 2000).max(100) as u64);
    let mut contenders = wanted(&contenders::ALL, "EXTPOOL_BENCH_ONLY", Contender::key);
    // The earlier build runs only when it is named; asked for by key
    // without it, its start fails the run.
    let named = |c: Contender| {
        std::env::var("EXTPOOL_BENCH_ONLY").is_ok_and(|o| o.split(',').any(|k| k.trim() == c.key()))
    };
    if std::env::var_os(contenders::BEFORE_ENV).is_none() && !named(Contender::ExtpoolBefore) {
        contenders.retain(|&c| c != Contender::ExtpoolBefore);
    }
    let upstreams = wanted(&Upstream::ALL, "EXTPOOL_BENCH_UPSTREAMS", Upstream::key);
    let out_dir = std::env::var_os("EXTPOOL_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench"));
    let project = tempfile::tempdir().unwrap();
    let config = contenders::gateway_project(project.path());
    let load_start = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let wrk_pass = wrk::enabled().then(|| WrkPass {
        binary: wrk::binary(),
        seconds: wrk::seconds(length),
    });
    let mut samples: Vec<Sample> = Vec::new();
    let mut wrk_samples: Vec<WrkSample> = Vec::new();
    let mut measure = |round, c, upstream| {
        let (s, w) = run_one(round, c, upstream, &config, length, wrk_pass.as_ref());
        samples.extend(s);
        wrk_samples.extend(w);
    };
    for round in 0..rounds {
        for &c in contenders.iter().filter(|c| c.is_floor()) {
            let t = Instant::now();
            measure(round, c, Upstream::Testkit);
            eprintln!(
                "gateway bench: round {round} {} in {:.1?}",
                c.name(),
                t.elapsed()
            );
        }
        for &upstream in &upstreams {
            for &c in contenders.iter().filter(|c| !c.is_floor()) {
                let t = Instant::now();
                measure(round, c, upstream);
                eprintln!(
                    "gateway bench: round {round} {} before the {} in {:.1?}",
                    c.name(),
                    upstream.name(),
                    t.elapsed()
                );
            }
        }
    }
    let idle = idle_sessions(&contenders, &config);
    let load_end = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let first3 = |s: &str| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let machine = format!(
        "{} cores, load average {} at the start, {} at the end; {rounds} rounds, each level {length:?} measured after {WARMUP:?} of warm-up",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        first3(&load_start),
        first3(&load_end),
    );
    let mut markdown = report::markdown(&samples, &contenders, &upstreams, &machine);
    markdown.push_str(&wrk_report::markdown(
        &samples,
        &wrk_samples,
        &contenders,
        &upstreams,
    ));
    markdown.push_str(&report::idle(&idle));
    println!("{markdown}");
    std::fs::create_dir_all(&out_dir).unwrap();
    for &upstream in &upstreams {
        let svg = report::svg(&samples, &contenders, upstream);
        let path = out_dir.join(format!("gateway-{}.svg", upstream.key()));
        std::fs::write(&path, svg).unwrap();
        println!("chart: {}", path.display());
    }
    let json =
        json!({"machine": machine, "samples": samples, "wrk": wrk_samples, "idle_sessions": idle});
    std::fs::write(
        out_dir.join("gateway.json"),
        serde_json::to_vec_pretty(&json).unwrap(),
    )
    .unwrap();
    std::fs::write(out_dir.join("gateway.md"), markdown).unwrap();
    println!("samples: {}", out_dir.join("gateway.json").display());
}
