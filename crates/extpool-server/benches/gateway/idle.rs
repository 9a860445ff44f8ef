//! Memory of open idle MCP sessions: session-era `initialize` (and
//! `notifications/initialized`) on `/mcp`, no calls, over a few
//! keep-alive connections; the contender's memory read before and after,
//! per session.
//!
//! - **What counts.** The verdict is on anonymous resident memory
//!   (`RssAnon`: the heap, stacks), what sessions hold. The whole resident
//!   set (`VmRSS`) is printed beside it: it also counts the binary's code
//!   paged in by the first requests (file-backed, shared with every
//!   process running the binary, given back under pressure), about
//!   3.3 MiB for extpool's first `initialize`, which is no session's.

use super::contenders::Served;
use super::loadgen;

/// Connections the sessions are opened over.
const CONNECTIONS: usize = 16;

/// One step: sessions open in all, and the memory above the process
/// before the first was opened: anonymous (the verdict's) and all of the
/// resident set.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Step {
    pub contender: &'static str,
    pub sessions: usize,
    pub opened: usize,
    pub rss_kib: u64,
    pub above_kib: u64,
    pub anon_above_kib: u64,
    pub bytes_per_session: f64,
}

/// Field `field` of `/proc/<pid>/status` in KiB (`VmRSS`, `RssAnon`), 0
/// when gone.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Opens sessions on `served` up to each of `steps` (cumulative) and
/// reads its memory after each.
pub fn measure(served: &Served, name: &'static str, steps: &[usize]) -> Vec<Step> {
    let pid = served.pid();
    let (base, anon_base) = (status_kib(pid, "VmRSS"), status_kib(pid, "RssAnon"));
    let mut open = 0;
    let mut out = Vec::new();
    for &target in steps {
        let more = target.saturating_sub(open);
        open += loadgen::open_sessions(served.addr, "/mcp", more, CONNECTIONS);
        let rss = status_kib(pid, "VmRSS");
        let anon_above = status_kib(pid, "RssAnon").saturating_sub(anon_base);
        out.push(Step {
            contender: name,
            sessions: target,
            opened: open,
            rss_kib: rss,
            above_kib: rss.saturating_sub(base),
            anon_above_kib: anon_above,
            bytes_per_session: anon_above as f64 * 1024.0 / open.max(1) as f64,
        });
    }
    out
}
