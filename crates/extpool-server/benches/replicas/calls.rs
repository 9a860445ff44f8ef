//! Part 2: calls/s through one replica vs two, the same client and the
//! same round-robin balancer in front of both topologies.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Instant;

use extpool_state::{ReplicaId, StateStore};
use extpool_testkit::balancer::{Balancer, Policy};
use extpool_testkit::postgres::PgServer;
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use crate::Sample;

/// Set in a replica child: the store URL it serves from.
pub const REPLICA_STATE_ENV: &str = "EXTPOOL_BENCH_REPLICA_STATE";
const REPLICA_CONFIG_ENV: &str = "EXTPOOL_BENCH_REPLICA_CONFIG";
const REPLICA_ID_ENV: &str = "EXTPOOL_BENCH_REPLICA_ID";
/// Calls in flight in the concurrent phase.
pub const INFLIGHT: usize = 32;
const WARMUP: usize = 200;

/// The replica child: a gateway (as `extpool serve --state URL` runs it)
/// on 127.0.0.1:0, its address printed, stopped when stdin closes.
pub fn run_replica(state: &str) -> ! {
    let config = PathBuf::from(std::env::var_os(REPLICA_CONFIG_ENV).expect("the config"));
    let id = std::env::var(REPLICA_ID_ENV).expect("the replica id");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store = StateStore::open_url(state).await.unwrap();
        let options = extpool_server::GatewayOptions {
            replica_id: Some(ReplicaId::new(id).unwrap()),
            ..Default::default()
        };
        let (gateway, base) = crate::store::gateway_with(&config, store, options).await;
        let mut out = std::io::stdout();
        writeln!(out, "listening {base}").unwrap();
        out.flush().unwrap();
        let _ = tokio::task::spawn_blocking(|| {
            let mut rest = Vec::new();
            std::io::stdin().read_to_end(&mut rest)
        })
        .await;
        gateway.shutdown().await;
    });
    std::process::exit(0)
}

/// A replica child, stopped (stdin closed, then waited for) when dropped.
struct Replica {
    child: Child,
    stdin: Option<ChildStdin>,
    base: String,
}

impl Replica {
    fn spawn(state: &str, config: &Path, id: &str) -> Replica {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(REPLICA_STATE_ENV, state)
            .env(REPLICA_CONFIG_ENV, config)
            .env(REPLICA_ID_ENV, id)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines.next().expect("the replica's address").unwrap();
        let base = line
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("unexpected: {line}"))
            .to_owned();
        let stdin = child.stdin.take();
        Replica { child, stdin, base }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

type Client = RunningService<RoleClient, ()>;

/// rmcp over streamable HTTP, pooled, TCP_NODELAY (as the gateway
/// benchmark's client).
async fn connect(url: &str) -> Client {
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).max_concurrent_requests(64);
    ().serve(StreamableHttpClientTransport::with_client(http, config))
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
}

async fn measure(
    round: usize,
    side: &str,
    client: &Client,
    seq: usize,
    conc: usize,
) -> [Sample; 2] {
    let args = json!({"message": "ping"}).as_object().cloned().unwrap();
    let [sequential, concurrent] = crate::common::echo_phases(
        client.peer(),
        "mcp__kit__echo",
        &args,
        (WARMUP, seq, conc, INFLIGHT),
    )
    .await;
    [
        Sample::new(
            round,
            "calls sequential",
            side,
            sequential.latencies,
            sequential.took,
        ),
        Sample::new(
            round,
            "calls, 32 in flight",
            side,
            concurrent.latencies,
            concurrent.took,
        ),
    ]
}

pub async fn run(pg: &PgServer, rounds: usize, seq: usize, conc: usize) -> Vec<Sample> {
    let db = pg.database();
    let dir = tempfile::tempdir().unwrap();
    let config = crate::store::project(dir.path());
    let a = Replica::spawn(&db, &config, "bench-a");
    let b = Replica::spawn(&db, &config, "bench-b");
    let mut samples = Vec::new();
    for round in 0..rounds {
        for (side, backends) in [
            ("1 replica", vec![a.base.clone()]),
            ("2 replicas", vec![a.base.clone(), b.base.clone()]),
        ] {
            let t = Instant::now();
            let lb = Balancer::start(backends, Policy::RoundRobin).await;
            let client = connect(&format!("{}/mcp", lb.url())).await;
            samples.extend(measure(round, side, &client, seq, conc).await);
            let _ = client.cancel().await;
            let served = lb.served();
            assert!(
                served.iter().all(|n| *n > 0),
                "every replica served: {served:?}"
            );
            eprintln!(
                "replicas bench: round {round} {side} in {:.1?} (requests per replica {served:?})",
                t.elapsed()
            );
        }
    }
    drop((a, b));
    samples
}
