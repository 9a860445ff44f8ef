//! Prometheus metrics of the gateway (`GET /metrics`, text format 0.0.4):
//! calls, errors and latency per server and tool, sessions, and each
//! upstream server's status.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use extpool_host::HostStatus;
use parking_lot::Mutex;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0,
];

/// Most (server, tool) series kept; calls past it are counted under
/// `tool="other"` (tool names come from upstream servers).
pub const MAX_SERIES: usize = 4096;

#[derive(Debug, Default, Clone)]
struct Series {
    calls: u64,
    errors: u64,
    buckets: [u64; BUCKETS.len()],
    sum: f64,
}

/// The gateway's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    calls: Mutex<BTreeMap<(String, String), Series>>,
    sessions: AtomicI64,
}

impl Metrics {
    /// Records one call of `tool` on `server` that took `elapsed`.
    pub fn record_call(&self, server: &str, tool: &str, elapsed: Duration, failed: bool) {
        let mut calls = self.calls.lock();
        let key = (server.to_owned(), tool.to_owned());
        let key = if calls.contains_key(&key) || calls.len() < MAX_SERIES {
            key
        } else {
            (server.to_owned(), "other".to_owned())
        };
        let series = calls.entry(key).or_default();
        series.calls += 1;
        if failed {
            series.errors += 1;
        }
        let secs = elapsed.as_secs_f64();
        series.sum += secs;
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                series.buckets[i] += 1;
            }
        }
    }

    /// A client session opened (+1) or closed (-1).
    pub fn sessions(&self, delta: i64) {
        self.sessions.fetch_add(delta, Ordering::Relaxed);
    }

    /// The open client sessions.
    pub fn open_sessions(&self) -> i64 {
        self.sessions.load(Ordering::Relaxed)
    }

    /// Everything, in Prometheus' text format.
    pub fn render(&self, status: &HostStatus) -> String {
        let mut out = String::new();
        let calls = self.calls.lock().clone();
        let label = |s: &str| {
            s.replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
        };
        out.push_str("# HELP extpool_tool_calls_total Tool calls through the gateway.\n");
        out.push_str("# TYPE extpool_tool_calls_total counter\n");
        for ((server, tool), s) in &calls {
            let _ = writeln!(
                out,
                "extpool_tool_calls_total{{server=\"{}\",tool=\"{}\"}} {}",
                label(server),
                label(tool),
                s.calls
            );
        }
        out.push_str(
            "# HELP extpool_tool_errors_total Tool calls that failed (an error or a tool error).\n",
        );
        out.push_str("# TYPE extpool_tool_errors_total counter\n");
        for ((server, tool), s) in &calls {
            let _ = writeln!(
                out,
                "extpool_tool_errors_total{{server=\"{}\",tool=\"{}\"}} {}",
                label(server),
                label(tool),
                s.errors
            );
        }
        out.push_str("# HELP extpool_tool_call_seconds Latency of tool calls.\n");
        out.push_str("# TYPE extpool_tool_call_seconds histogram\n");
        for ((server, tool), s) in &calls {
            let (server, tool) = (label(server), label(tool));
            for (bound, count) in BUCKETS.iter().zip(s.buckets.iter()) {
                let _ = writeln!(
                    out,
                    "extpool_tool_call_seconds_bucket{{server=\"{server}\",tool=\"{tool}\",le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "extpool_tool_call_seconds_bucket{{server=\"{server}\",tool=\"{tool}\",le=\"+Inf\"}} {}",
                s.calls
            );
            let _ = writeln!(
                out,
                "extpool_tool_call_seconds_sum{{server=\"{server}\",tool=\"{tool}\"}} {}",
                s.sum
            );
            let _ = writeln!(
                out,
                "extpool_tool_call_seconds_count{{server=\"{server}\",tool=\"{tool}\"}} {}",
                s.calls
            );
        }
        out.push_str("# HELP extpool_sessions Open client sessions.\n");
        out.push_str("# TYPE extpool_sessions gauge\n");
        let _ = writeln!(out, "extpool_sessions {}", self.open_sessions());
        out.push_str(
            "# HELP extpool_upstream_up Whether an upstream server is usable (1) or not (0).\n",
        );
        out.push_str("# TYPE extpool_upstream_up gauge\n");
        for server in &status.servers {
            let _ = writeln!(
                out,
                "extpool_upstream_up{{server=\"{}\",state=\"{}\"}} {}",
                label(&server.name),
                server.state.word(),
                u8::from(server.state.is_usable())
            );
        }
        out.push_str("# HELP extpool_catalog_revision The catalog revision clients are served.\n");
        out.push_str("# TYPE extpool_catalog_revision gauge\n");
        let _ = writeln!(out, "extpool_catalog_revision {}", status.catalog.revision);
        out
    }
}
