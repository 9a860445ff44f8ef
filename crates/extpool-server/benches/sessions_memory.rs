//! Memory of idle gateway sessions: a gateway on the testkit server and a
//! SQLite store, then 1,000 and 10,000 durable sessions created through the
//! HTTP API; prints the resident set size above the idle gateway.
//!
//!     cargo bench -p extpool-server --bench sessions_memory
//!
//! `EXTPOOL_BENCH_SESSIONS=1000,10000` sets the steps. Target (issue: gateway
//! sessions): 1,000 idle sessions ≤ 50 MB above an idle daemon.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use extpool_host::{Host, HostOptions, Places};
use extpool_server::{Gateway, GatewayOptions};
use extpool_state::StateStore;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let steps: Vec<usize> = std::env::var("EXTPOOL_BENCH_SESSIONS")
        .unwrap_or_else(|_| "1000,10000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let state = extpool_testkit::StateDir::new();
    let (program, args) = extpool_testkit::stdio_command(state.args()).into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    std::fs::write(
        dir.path().join("extpool.yaml"),
        format!(
            "mcp_servers:\n  testkit:\n    command: {:?}\n    args: [{}]\nskills:\n  default_roots: false\n",
            program.display().to_string(),
            args.join(", ")
        ),
    )
    .unwrap();
    let host = Host::start(HostOptions {
        places: Places {
            cwd: dir.path().to_path_buf(),
            home: Some(dir.path().join("home")),
            ..Places::default()
        },
        watch_skills: Some(false),
        relay: true,
        ..HostOptions::files([dir.path().join("extpool.yaml")])
    })
    .await
    .unwrap();
    let store = StateStore::open_url(&format!("sqlite:{}", dir.path().join("s.db").display()))
        .await
        .unwrap();
    let gateway = Gateway::new(
        host,
        GatewayOptions {
            state: Some(store),
            // One caller makes every session here.
            sessions_per_principal: usize::MAX,
            ..GatewayOptions::default()
        },
    )
    .await
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let serving = gateway.clone();
    tokio::spawn(async move { serving.serve_http(listener).await });
    let client = reqwest::Client::new();
    let create = |i: usize| {
        let client = client.clone();
        let url = format!("{base}/v1/sessions");
        async move {
            let r = client
                .post(url)
                .header("content-type", "application/json")
                .body(format!("{{\"id\":\"idle-{i}\"}}"))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 201);
        }
    };
    // Warm-up: one session, so allocator pools and the HTTP stack exist.
    create(0).await;
    let idle = rss_kib();
    println!(
        "idle gateway (1 session): {:.1} MiB RSS",
        idle as f64 / 1024.0
    );
    let mut made = 1;
    for step in steps {
        while made < step {
            let batch: Vec<_> = (made..step.min(made + 64)).map(create).collect();
            made += batch.len();
            futures::future::join_all(batch).await;
        }
        let now = rss_kib();
        let above = now.saturating_sub(idle) as f64 / 1024.0;
        println!(
            "{step:>6} idle sessions: {:.1} MiB RSS, {above:.1} MiB above idle, {:.1} KiB per session",
            now as f64 / 1024.0,
            (now.saturating_sub(idle)) as f64 / step as f64
        );
    }
    gateway.shutdown().await;
}
