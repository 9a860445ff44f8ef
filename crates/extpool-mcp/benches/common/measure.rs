//! Measuring one contender: warm-up, sequential calls, then calls with a
//! fixed number in flight; latency percentiles, calls/s and the CPU time
//! this process spent per call. Shared by the extpool-mcp benchmarks.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::{Deserialize, Serialize};

pub fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Phase {
    pub calls: usize,
    pub calls_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// CPU time (user + system) the client process spent per call.
    #[serde(default)]
    pub cpu_us_per_call: f64,
    /// Latency at 0, 1, …, 100 % (Rust clients only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percentiles_us: Vec<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    pub sequential: Phase,
    pub concurrent: Phase,
}

/// CPU seconds (user + system) this process used so far (Linux ticks of 10 ms).
pub fn process_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

pub fn phase(mut latencies: Vec<Duration>, elapsed: Duration, cpu: f64) -> Phase {
    latencies.sort();
    let q = |p: f64| {
        let i = ((p * latencies.len() as f64) as usize).min(latencies.len() - 1);
        latencies[i].as_secs_f64() * 1e6
    };
    Phase {
        calls: latencies.len(),
        calls_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50_us: q(0.5),
        p99_us: q(0.99),
        cpu_us_per_call: cpu * 1e6 / latencies.len() as f64,
        percentiles_us: (0..=100).map(|p| q(f64::from(p) / 100.0)).collect(),
    }
}

#[derive(Clone, Copy)]
pub struct Sizes {
    pub warmup: usize,
    pub seq: usize,
    pub conc: usize,
    pub inflight: usize,
}

pub async fn measure<F, Fut>(sizes: Sizes, call: F) -> Run
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..sizes.warmup {
        call().await;
    }
    let mut sequential = Phase::default();
    if sizes.seq > 0 {
        let mut lat = Vec::with_capacity(sizes.seq);
        let cpu = process_cpu();
        let start = Instant::now();
        for _ in 0..sizes.seq {
            let t = Instant::now();
            call().await;
            lat.push(t.elapsed());
        }
        sequential = phase(lat, start.elapsed(), process_cpu() - cpu);
    }
    let cpu = process_cpu();
    let start = Instant::now();
    let lat: Vec<Duration> = futures::stream::iter(0..sizes.conc)
        .map(|_| {
            let fut = call();
            async move {
                let t = Instant::now();
                fut.await;
                t.elapsed()
            }
        })
        .buffer_unordered(sizes.inflight)
        .collect()
        .await;
    let concurrent = phase(lat, start.elapsed(), process_cpu() - cpu);
    Run {
        sequential,
        concurrent,
    }
}
