//! Start-up of many servers at once vs one: `Host::start` on a
//! configuration of 20 stdio servers, against `Host::start` on each of those
//! servers alone.
//!
//! `Host::start` returns when every selected server has started (spawned,
//! initialized, tools listed) and the catalog's first revision is built, so
//! its wall time is what a user waits for before the first tool list. The
//! host starts servers in parallel, so 20 servers should take about as long
//! as the slowest of them alone; on a machine with few cores the processes'
//! own start-up CPU puts a floor under that.
//!
//! Per round: each server started alone (20 hosts, one after the other),
//! then all 20 in one host. Reported: median over rounds of the all-20
//! time, of the slowest single start of the round and of the median single
//! start, and the per-round ratios. Servers: the testkit server (a Rust
//! binary; about the cheapest real MCP server to start) and the reference
//! `server-everything` on Node (needs `scripts/peers.sh`; each start is a
//! Node process loading its modules, a few hundred ms of CPU).
//!
//! Run: `cargo bench -p extpool-host --bench startup`. Knobs:
//! `EXTPOOL_BENCH_ROUNDS` (5), `EXTPOOL_BENCH_STARTUP_N` (20),
//! `EXTPOOL_BENCH_STARTUP_SERVERS` (`testkit,everything`).
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::Path;
use std::time::{Duration, Instant};

use extpool_host::{Host, HostOptions, Places, ServerState};
use extpool_testkit::StdioCommand;

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn server_command(kind: &str) -> StdioCommand {
    match kind {
        "testkit" => extpool_testkit::stdio_command(Vec::<String>::new()),
        "everything" => extpool_testkit::peers::server_everything(),
        other => panic!("unknown server kind {other:?} (testkit or everything)"),
    }
}

/// An `extpool.yaml` with servers `s00`… for `indices`.
fn config_yaml(command: &StdioCommand, indices: &[usize]) -> String {
    let args: Vec<String> = command.args.iter().map(|a| format!("{a:?}")).collect();
    let mut yaml = String::from("mcp_servers:\n");
    for i in indices {
        yaml.push_str(&format!(
            "  s{i:02}:\n    command: {:?}\n    args: [{}]\n",
            command.program.display().to_string(),
            args.join(", ")
        ));
    }
    yaml
}

/// Starts a host on `yaml`; returns the time `Host::start` took.
async fn start(dir: &Path, yaml: &str, expect: usize) -> Duration {
    let file = dir.join("extpool.yaml");
    std::fs::write(&file, yaml).unwrap();
    let options = HostOptions {
        places: Places {
            cwd: dir.to_path_buf(),
            home: Some(dir.join("home")),
            ..Places::default()
        },
        watch_skills: Some(false),
        ..HostOptions::files([file])
    };
    let t = Instant::now();
    let host = Host::start(options).await.unwrap();
    let took = t.elapsed();
    let ready = host
        .servers()
        .iter()
        .filter(|s| matches!(s.state, ServerState::Ready { .. }))
        .count();
    assert_eq!(ready, expect, "servers not ready: {:?}", host.servers());
    host.shutdown().await;
    took
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn range(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(0.0, f64::max);
    format!("{min:.1}–{max:.1}")
}

fn main() {
    let rounds = env_usize("EXTPOOL_BENCH_ROUNDS", 5).max(1);
    let n = env_usize("EXTPOOL_BENCH_STARTUP_N", 20).max(1);
    let kinds = std::env::var("EXTPOOL_BENCH_STARTUP_SERVERS")
        .unwrap_or_else(|_| "testkit,everything".into());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let first3 = |s: &str| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
    let load_start = first3(&load);
    let mut lines = Vec::new();
    for kind in kinds.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let command = server_command(kind);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let all: Vec<usize> = (0..n).collect();
        let (mut together, mut slowest, mut typical) = (Vec::new(), Vec::new(), Vec::new());
        let (mut vs_slowest, mut vs_typical) = (Vec::new(), Vec::new());
        rt.block_on(async {
            // One unmeasured start, so the binary and its libraries are cached.
            start(dir.path(), &config_yaml(&command, &[0]), 1).await;
            for _ in 0..rounds {
                let mut singles = Vec::with_capacity(n);
                for i in 0..n {
                    let t = start(dir.path(), &config_yaml(&command, &[i]), 1).await;
                    singles.push(t.as_secs_f64() * 1e3);
                }
                let t = start(dir.path(), &config_yaml(&command, &all), n).await;
                let t = t.as_secs_f64() * 1e3;
                let max = singles.iter().copied().fold(0.0, f64::max);
                let med = median(singles);
                together.push(t);
                slowest.push(max);
                typical.push(med);
                vs_slowest.push(t / max);
                vs_typical.push(t / med);
            }
        });
        lines.push(format!(
            "| {kind} | {:.1} ({}) | {:.1} ({}) | {:.1} ({}) | {:.2}× ({}) | {:.2}× ({}) |",
            median(together.clone()),
            range(&together),
            median(slowest.clone()),
            range(&slowest),
            median(typical.clone()),
            range(&typical),
            median(vs_slowest.clone()),
            range_x(&vs_slowest),
            median(vs_typical.clone()),
            range_x(&vs_typical),
        ));
    }
    let load_end = first3(&std::fs::read_to_string("/proc/loadavg").unwrap_or_default());
    println!(
        "start-up: Host::start with {n} stdio servers vs each alone; {rounds} rounds; {} cores; load average {load_start} at the start, {load_end} at the end. Medians over rounds, (min–max).",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    println!();
    println!(
        "| server | {n} at once ms | slowest single ms | median single ms | {n} ÷ slowest single | {n} ÷ median single |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for line in lines {
        println!("{line}");
    }
}

fn range_x(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(0.0, f64::max);
    format!("{min:.2}–{max:.2}")
}
