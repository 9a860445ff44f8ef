//! Prometheus metrics of the gateway (`GET /metrics`, text format 0.0.4):
//! calls, errors and latency per server and tool, sessions, and each
//! upstream server's status.

pub(crate) mod window;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
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

impl Series {
    /// Counts one call that took `elapsed`.
    fn count(&mut self, elapsed: Duration, failed: bool) {
        self.calls += 1;
        if failed {
            self.errors += 1;
        }
        let secs = elapsed.as_secs_f64();
        self.sum += secs;
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                self.buckets[i] += 1;
            }
        }
    }
}

/// Why the gateway refused a request or a connection (a label of
/// `extpool_refused_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A `Host` that does not name this gateway.
    Host,
    /// A browser `Origin` not allowed.
    Origin,
    /// No or a wrong bearer token.
    Auth,
    /// A body over the limit.
    Body,
    /// A connection past `--max-connections`.
    Connections,
    /// A session past `--max-sessions`.
    Sessions,
    /// A request id already in flight on its session.
    DuplicateId,
    /// A request that came through this gateway already (a loop of
    /// extpools, `Extpool-Via`).
    Loop,
    /// An operator page stream past `--max-page-streams`.
    PageStreams,
}

impl Refusal {
    const ALL: [Refusal; 9] = [
        Refusal::Host,
        Refusal::Origin,
        Refusal::Auth,
        Refusal::Body,
        Refusal::Connections,
        Refusal::Sessions,
        Refusal::DuplicateId,
        Refusal::Loop,
        Refusal::PageStreams,
    ];

    /// Its label value.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Host => "host",
            Refusal::Origin => "origin",
            Refusal::Auth => "auth",
            Refusal::Body => "body",
            Refusal::Connections => "connections",
            Refusal::Sessions => "sessions",
            Refusal::DuplicateId => "duplicate_id",
            Refusal::Loop => "loop",
            Refusal::PageStreams => "page_streams",
        }
    }
}

/// Most callers counted by name in `extpool_principal_calls_total`; calls
/// of the others are counted under `principal="other"`.
pub const MAX_PRINCIPAL_SERIES: usize = 256;

/// The gateway's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    calls: Mutex<BTreeMap<(String, String), Series>>,
    sessions: AtomicI64,
    refused: [AtomicU64; Refusal::ALL.len()],
    expired: AtomicU64,
    /// Tool calls by caller (bounded).
    principals: Mutex<BTreeMap<String, u64>>,
    /// Calls refused by each rate limit (labels from the configuration).
    limited: Mutex<BTreeMap<String, u64>>,
    /// The last minute of calls per server, for the operator page.
    window: window::Window,
}

/// A series' key, `(server, tool)`, owned or borrowed: what lets
/// [`Metrics::record_call`] find a series without allocating its key.
trait SeriesKey {
    fn key(&self) -> (&str, &str);
}

impl SeriesKey for (String, String) {
    fn key(&self) -> (&str, &str) {
        (&self.0, &self.1)
    }
}

impl SeriesKey for (&str, &str) {
    fn key(&self) -> (&str, &str) {
        (self.0, self.1)
    }
}

impl<'a> std::borrow::Borrow<dyn SeriesKey + 'a> for (String, String) {
    fn borrow(&self) -> &(dyn SeriesKey + 'a) {
        self
    }
}

impl PartialEq for dyn SeriesKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for dyn SeriesKey + '_ {}

impl PartialOrd for dyn SeriesKey + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn SeriesKey + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl Metrics {
    /// Records one call of `tool` on `server` that took `elapsed`.
    pub fn record_call(&self, server: &str, tool: &str, elapsed: Duration, failed: bool) {
        self.window.record(server, elapsed, failed);
        let mut calls = self.calls.lock();
        // A series seen before is found by the names borrowed: no
        // allocation in the common case.
        if let Some(series) = calls.get_mut(&(server, tool) as &dyn SeriesKey) {
            series.count(elapsed, failed);
            return;
        }
        let tool = if calls.len() < MAX_SERIES {
            tool
        } else {
            "other"
        };
        (calls.entry((server.to_owned(), tool.to_owned())))
            .or_default()
            .count(elapsed, failed);
    }

    /// The last minute of calls per server (the operator page's charts).
    pub(crate) fn window(&self) -> &window::Window {
        &self.window
    }

    /// Counts a tool call of `principal` (its label).
    pub fn principal_call(&self, principal: &str) {
        let mut principals = self.principals.lock();
        let key = if principals.contains_key(principal) || principals.len() < MAX_PRINCIPAL_SERIES {
            principal
        } else {
            "other"
        };
        match principals.get_mut(key) {
            Some(count) => *count += 1,
            None => {
                principals.insert(key.to_owned(), 1);
            }
        }
    }

    /// Counts a call refused by the rate limit `limit`.
    pub fn rate_limited(&self, limit: &str) {
        *self.limited.lock().entry(limit.to_owned()).or_default() += 1;
    }

    /// A client session opened (+1) or closed (-1).
    pub fn sessions(&self, delta: i64) {
        self.sessions.fetch_add(delta, Ordering::Relaxed);
    }

    /// Counts sessions ended for being idle.
    pub fn expired(&self, n: u64) {
        self.expired.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts a refusal.
    pub fn refused(&self, why: Refusal) {
        if let Some(i) = Refusal::ALL.iter().position(|r| *r == why) {
            self.refused[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The open client sessions.
    pub fn open_sessions(&self) -> i64 {
        self.sessions.load(Ordering::Relaxed)
    }

    /// Everything, in Prometheus' text format.
    pub fn render(&self, status: &HostStatus) -> String {
        let mut out = String::new();
        let calls = self.calls.lock().clone();
        let label = label_value;
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
        out.push_str("# HELP extpool_sessions_expired_total Sessions whose memory was freed after --session-idle-timeout with nothing open.\n");
        out.push_str("# TYPE extpool_sessions_expired_total counter\n");
        let _ = writeln!(
            out,
            "extpool_sessions_expired_total {}",
            self.expired.load(Ordering::Relaxed)
        );
        out.push_str("# HELP extpool_refused_total Requests and connections the gateway refused, by reason.\n");
        out.push_str("# TYPE extpool_refused_total counter\n");
        for (why, count) in Refusal::ALL.iter().zip(&self.refused) {
            let _ = writeln!(
                out,
                "extpool_refused_total{{reason=\"{}\"}} {}",
                why.label(),
                count.load(Ordering::Relaxed)
            );
        }
        counter_family(
            &mut out,
            "extpool_principal_calls_total",
            "Tool calls by caller (the first 256 callers by name, then \"other\").",
            "principal",
            &self.principals.lock(),
        );
        counter_family(
            &mut out,
            "extpool_rate_limited_total",
            "Tool calls refused by a rate limit, by limit.",
            "limit",
            &self.limited.lock(),
        );
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
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            out.push_str("# HELP extpool_runtime_workers Threads that serve requests (extpool serve --workers).\n");
            out.push_str("# TYPE extpool_runtime_workers gauge\n");
            let _ = writeln!(
                out,
                "extpool_runtime_workers {}",
                runtime.metrics().num_workers()
            );
        }
        out
    }
}

/// A counter family of one label, each value of `counts` a series.
fn counter_family(
    out: &mut String,
    name: &str,
    help: &str,
    label: &str,
    counts: &BTreeMap<String, u64>,
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} counter");
    for (value, count) in counts {
        let value = label_value(value);
        let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {count}");
    }
}

/// `s` as a label value of Prometheus' text format (backslash, quote
/// and newline escaped).
fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_seen_before_counts_on_and_past_the_most_new_ones_are_other() {
        let m = Metrics::default();
        let ms = Duration::from_millis(1);
        m.record_call("s", "t", ms, false);
        m.record_call("s", "t", ms, true);
        for i in 1..MAX_SERIES {
            m.record_call("s", &format!("t{i}"), ms, false);
        }
        m.record_call("s", "late", ms, false);
        m.record_call("s", "t", ms, false);
        let calls = m.calls.lock();
        let key = |tool: &str| ("s".to_owned(), tool.to_owned());
        let t = &calls[&key("t")];
        assert_eq!((t.calls, t.errors), (3, 1));
        assert_eq!(t.buckets[1], 3, "1 ms is within the 1 ms bucket");
        assert_eq!(calls[&key("other")].calls, 1);
        assert!(!calls.contains_key(&key("late")));
        assert_eq!(calls.len(), MAX_SERIES + 1);
    }

    #[test]
    fn a_caller_seen_before_counts_on_and_past_the_most_new_ones_are_other() {
        let m = Metrics::default();
        m.principal_call("alice");
        m.principal_call("alice");
        for i in 1..MAX_PRINCIPAL_SERIES {
            m.principal_call(&format!("p{i}"));
        }
        m.principal_call("late");
        m.principal_call("alice");
        let principals = m.principals.lock();
        assert_eq!(principals["alice"], 3);
        assert_eq!(principals["other"], 1);
        assert!(!principals.contains_key("late"));
    }
}
