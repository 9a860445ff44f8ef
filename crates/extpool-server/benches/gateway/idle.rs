//! Memory of open idle MCP sessions: session-era `initialize` (and
//! `notifications/initialized`) on `/mcp`, no calls, over a few
//! keep-alive connections; the contender's resident set read before and
//! after, per session.

use super::contenders::Served;
use super::loadgen;

/// Connections the sessions are opened over.
const CONNECTIONS: usize = 16;

/// One step: sessions open in all, and the resident set above the
/// process before the first was opened.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Step {
    pub contender: &'static str,
    pub sessions: usize,
    pub opened: usize,
    pub rss_kib: u64,
    pub above_kib: u64,
    pub bytes_per_session: f64,
}

/// The resident set of `pid` in KiB (`VmRSS`), 0 when gone.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Opens sessions on `served` up to each of `steps` (cumulative) and
/// reads its memory after each.
pub fn measure(served: &Served, name: &'static str, steps: &[usize]) -> Vec<Step> {
    let base = rss_kib(served.pid());
    let mut open = 0;
    let mut out = Vec::new();
    for &target in steps {
        let more = target.saturating_sub(open);
        open += loadgen::open_sessions(served.addr, "/mcp", more, CONNECTIONS);
        let rss = rss_kib(served.pid());
        let above = rss.saturating_sub(base);
        out.push(Step {
            contender: name,
            sessions: target,
            opened: open,
            rss_kib: rss,
            above_kib: above,
            bytes_per_session: above as f64 * 1024.0 / open.max(1) as f64,
        });
    }
    out
}
