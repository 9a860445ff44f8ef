//! What the gateway and replica benchmarks measure the same way: settings
//! from the environment, `echo` called sequentially and with calls in
//! flight, latency quantiles.

use std::time::{Duration, Instant};

use futures::StreamExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient};
use serde_json::{Map, Value};

/// `key` from the environment as a number, else `default`.
pub fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The latency at quantile `p` (0–1) of `sorted`, in µs (0 when empty).
pub fn quantile_us(sorted: &[Duration], p: f64) -> f64 {
    let i = ((p * sorted.len() as f64) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

/// The latencies of one phase and how long the whole phase took.
pub struct Phase {
    pub latencies: Vec<Duration>,
    pub took: Duration,
}

/// Calls tool `name` with `args` `warmup` times unmeasured, then `seq`
/// times one after another, then `conc` times with `inflight` in flight;
/// every answer must be a success. Returns the sequential and concurrent phases.
pub async fn echo_phases(
    peer: &Peer<RoleClient>,
    name: &str,
    args: &Map<String, Value>,
    (warmup, seq, conc, inflight): (usize, usize, usize, usize),
) -> [Phase; 2] {
    let call = || {
        let peer = peer.clone();
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args.clone());
        async move {
            let r = peer.call_tool(params).await.unwrap();
            assert_ne!(r.is_error, Some(true), "echo failed: {r:?}");
        }
    };
    for _ in 0..warmup {
        call().await;
    }
    let mut latencies = Vec::with_capacity(seq);
    let start = Instant::now();
    for _ in 0..seq {
        let t = Instant::now();
        call().await;
        latencies.push(t.elapsed());
    }
    let sequential = Phase {
        latencies,
        took: start.elapsed(),
    };
    let start = Instant::now();
    let latencies: Vec<Duration> = futures::stream::iter(0..conc)
        .map(|_| {
            let fut = call();
            async move {
                let t = Instant::now();
                fut.await;
                t.elapsed()
            }
        })
        .buffer_unordered(inflight)
        .collect()
        .await;
    let concurrent = Phase {
        latencies,
        took: start.elapsed(),
    };
    [sequential, concurrent]
}
