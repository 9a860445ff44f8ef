//! Part 1: session create and refresh latency on SQLite and PostgreSQL,
//! through a gateway's HTTP API and through the store alone.

use std::path::Path;
use std::time::{Duration, Instant};

use extpool_host::{Host, HostOptions, Places};
use extpool_server::{Gateway, GatewayOptions};
use extpool_state::{NewSession, SessionId, StateStore};
use extpool_testkit::postgres::PgServer;
use serde_json::{Value, json};

use crate::Sample;

/// Writes a project whose one server is the testkit over stdio; returns
/// the config's path.
pub fn project(dir: &Path) -> std::path::PathBuf {
    let state = dir.join("kit");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let (program, args) =
        extpool_testkit::stdio_command(["--state-dir".to_owned(), state.display().to_string()])
            .into_parts();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    let path = dir.join("extpool.yaml");
    std::fs::write(
        &path,
        format!(
            "mcp_servers:\n  kit:\n    command: {:?}\n    args: [{}]\nskills:\n  default_roots: false\n  watch: false\n",
            program.display().to_string(),
            args.join(", ")
        ),
    )
    .unwrap();
    path
}

/// A gateway on `config` keeping sessions in `store`, served on
/// 127.0.0.1:0; returns it and its base URL.
pub async fn gateway(config: &Path, store: StateStore) -> (Gateway, String) {
    gateway_with(config, store, GatewayOptions::default()).await
}

/// [`gateway`] with `options` (its `state` set to `store`).
pub async fn gateway_with(
    config: &Path,
    store: StateStore,
    options: GatewayOptions,
) -> (Gateway, String) {
    let dir = config.parent().unwrap().to_path_buf();
    let host = Host::start(HostOptions {
        places: Places {
            cwd: dir.clone(),
            home: Some(dir.join("home")),
            ..Places::default()
        },
        watch_skills: Some(false),
        relay: true,
        ..HostOptions::files([config.to_path_buf()])
    })
    .await
    .unwrap();
    let gateway = Gateway::new(
        host,
        GatewayOptions {
            state: Some(store),
            ..options
        },
    )
    .await
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let serving = gateway.clone();
    tokio::spawn(async move { serving.serve_http(listener).await });
    (gateway, base)
}

async fn post(client: &reqwest::Client, url: &str, body: Option<Value>) -> Value {
    let mut request = client.post(url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    response.json().await.unwrap()
}

/// One backend under test.
struct Backend {
    side: &'static str,
    store: StateStore,
    base: String,
    gateway: Gateway,
}

pub async fn run(pg: &PgServer, rounds: usize, ops: usize) -> Vec<Sample> {
    let dir = tempfile::tempdir().unwrap();
    let config = project(dir.path());
    let sqlite = format!("sqlite:{}", dir.path().join("state.db").display());
    let mut backends = Vec::new();
    for (side, url) in [("sqlite", sqlite), ("postgres", pg.database())] {
        let (gateway, base) = gateway(&config, StateStore::open_url(&url).await.unwrap()).await;
        // The store alone, through a handle of its own (as another replica).
        let store = StateStore::open_url(&url).await.unwrap();
        backends.push(Backend {
            side,
            store,
            base,
            gateway,
        });
    }
    let client = reqwest::Client::new();
    let names: Vec<String> = (0..50).map(|i| format!("mcp__bench__tool_{i}")).collect();
    let mut samples = Vec::new();
    for round in 0..rounds {
        for b in &backends {
            let t = Instant::now();
            // Through the API: create, then refresh each session once.
            let url = format!("{}/v1/sessions", b.base);
            let mut ids = Vec::with_capacity(ops);
            let (lat, total) = timed(
                ops,
                || async {
                    let created = post(&client, &url, Some(json!({}))).await;
                    created["session"]["id"].as_str().unwrap().to_owned()
                },
                &mut ids,
            )
            .await;
            samples.push(Sample::new(round, "api create", b.side, lat, total));
            let mut refreshes = Vec::new();
            let mut ids_iter = ids.iter();
            let (lat, total) = timed(
                ops,
                || {
                    let id = ids_iter.next().unwrap().clone();
                    let url = format!("{}/v1/sessions/{id}/mcp-refresh", b.base);
                    let client = client.clone();
                    async move { post(&client, &url, None).await }
                },
                &mut refreshes,
            )
            .await;
            samples.push(Sample::new(round, "api refresh", b.side, lat, total));
            // The store alone: a create granting 50 names, a refresh
            // granting one more.
            let mut sids = Vec::with_capacity(ops);
            let mut k = 0;
            let (lat, total) = timed(
                ops,
                || {
                    k += 1;
                    let id = SessionId::new(format!("s{round}-{k}")).unwrap();
                    let new = NewSession::new(id.clone()).granting(&names, 1);
                    let store = b.store.clone();
                    async move {
                        store.create(&new).await.unwrap();
                        id
                    }
                },
                &mut sids,
            )
            .await;
            samples.push(Sample::new(
                round,
                "store create (50 names)",
                b.side,
                lat,
                total,
            ));
            let mut it = sids.iter().cloned();
            let mut done = Vec::new();
            let (lat, total) = timed(
                ops,
                || {
                    let id = it.next().unwrap();
                    let store = b.store.clone();
                    let active: Vec<String> = names
                        .iter()
                        .cloned()
                        .chain([format!("mcp__bench__new_{round}")])
                        .collect();
                    async move { store.refresh(&id, &active, 2).await.unwrap().added.len() }
                },
                &mut done,
            )
            .await;
            assert!(
                done.iter().all(|&n| n == 1),
                "each refresh granted one name"
            );
            samples.push(Sample::new(
                round,
                "store refresh (+1 name)",
                b.side,
                lat,
                total,
            ));
            eprintln!(
                "replicas bench: round {round} {} store in {:.1?}",
                b.side,
                t.elapsed()
            );
        }
    }
    for b in backends {
        b.gateway.shutdown().await;
    }
    samples
}

/// Runs `op` `n` times in sequence, keeping what each returns in `out`;
/// returns the latencies and the total time.
async fn timed<T, F, Fut>(n: usize, mut op: F, out: &mut Vec<T>) -> (Vec<Duration>, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        out.push(op().await);
        lat.push(t.elapsed());
    }
    (lat, start.elapsed())
}
