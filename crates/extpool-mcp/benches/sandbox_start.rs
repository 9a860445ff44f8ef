//! What confinement adds to a stdio server's start: the testkit server
//! started (spawn + MCP `initialize`) and closed, one at a time, under
//! each kind of profile, against the same server unconfined; and what
//! preparing a confinement (the Landlock rules, `/etc` entry by entry)
//! costs alone.
//!
//! Run: `cargo bench -p extpool-mcp --bench sandbox_start` (not in CI).
//! `EXTPOOL_SANDBOX_STARTS` (40) starts per variant, after 3 unmeasured
//! ones. Prints the median and the 90th percentile of each, in ms.
#![allow(
    missing_docs,
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use extpool_mcp::{ClientOptions, McpClient, McpServerConfig, ServerName, SpawnPolicy};
use extpool_sandbox::{Network, PrivateDirs, SandboxProfile};

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn report(label: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{label:<34} median {:>6.2} ms   p90 {:>6.2} ms   (n={})",
        percentile(&times, 0.5),
        percentile(&times, 0.9),
        times.len()
    );
}

fn main() {
    let starts: usize = std::env::var("EXTPOOL_SANDBOX_STARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cmd = extpool_testkit::stdio_command(std::iter::empty::<&str>());
    let plain = McpServerConfig::stdio(cmd.program.to_string_lossy(), cmd.args.clone());
    let with = |network: Network| {
        let mut cfg = plain.clone();
        cfg.sandbox = Some(SandboxProfile {
            network,
            ..SandboxProfile::default()
        });
        cfg
    };
    let variants = [
        ("unconfined", plain.clone()),
        ("network any (Landlock only)", with(Network::Any)),
        ("network none (+ namespaces)", with(Network::None)),
        ("network loopback", with(Network::Loopback)),
        (
            "network [127.0.0.1:9] (+ forwarder)",
            with(Network::Allow(vec!["127.0.0.1:9".parse().unwrap()])),
        ),
    ];
    let options = Arc::new(ClientOptions {
        spawn: SpawnPolicy {
            sandbox_dir: Some(dir.path().to_path_buf()),
            ..SpawnPolicy::default()
        },
        ..ClientOptions::default()
    });
    println!("testkit server start + initialize + close, one at a time:");
    for (label, cfg) in &variants {
        let times = runtime.block_on(async {
            let mut times = Vec::new();
            for i in 0..starts + 3 {
                let started = Instant::now();
                let client = McpClient::connect(
                    ServerName::new("bench").unwrap(),
                    cfg.clone(),
                    options.clone(),
                )
                .await
                .expect("the server starts");
                let took = started.elapsed();
                client.close().await;
                if i >= 3 {
                    times.push(took);
                }
            }
            times
        });
        report(label, times);
    }
    println!("preparing a confinement alone (no process):");
    let dirs = PrivateDirs::of(dir.path(), "prepare");
    dirs.create().unwrap();
    let path = std::env::var_os("PATH");
    let profile = SandboxProfile::default();
    let times = (0..starts + 3)
        .map(|_| {
            let started = Instant::now();
            let prepared = extpool_sandbox::prepare(&extpool_sandbox::Request {
                profile: &profile,
                server: "prepare",
                program: "true",
                cwd: None,
                path_var: path.as_deref(),
                dirs: &dirs,
            })
            .unwrap();
            let took = started.elapsed();
            drop(prepared);
            took
        })
        .skip(3)
        .collect();
    report("extpool_sandbox::prepare", times);
}
