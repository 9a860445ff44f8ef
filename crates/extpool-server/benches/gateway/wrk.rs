//! The same `tools/call echo` driven by wrk (Debian's `wrk` package), so
//! the figures do not rest on the load generator alone: one wrk thread,
//! 1 and 32 keep-alive connections, on the session the load generator
//! opened (`initialize` and `notifications/initialized` by the bench's
//! own client, wrk given its `Mcp-Session-Id`) or none for 2026-07-28
//! requests, with the headers ([`loadgen::headers`]) and body
//! ([`loadgen::call_body`]) the load generator sends. A generated Lua
//! script numbers the calls (a session refuses an id in flight twice) and
//! checks every answer as the load generator does (HTTP 200, a result,
//! not a tool's error); a run with any answer that is not one, or any
//! socket error, fails the benchmark. Requests/sec and the p50 and p99
//! of `--latency` are read from wrk's output; wrk's own CPU from
//! `/proc` when it has exited (before it is reaped).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;

use super::contenders::Contender;
use super::loadgen::{self, Target};

/// Connections wrk drives: one call at a time, and the level the
/// in-flight targets are read at.
pub const LEVELS: [usize; 2] = [1, super::INFLIGHT];
/// How long an answer may take before wrk counts a timeout (a failure).
const TIMEOUT: &str = "10s";

/// One wrk run of one contender in one round.
#[derive(Debug, Clone, Serialize)]
pub struct WrkSample {
    pub round: usize,
    /// The upstream's key, or `none` for a floor.
    pub upstream: &'static str,
    pub contender: &'static str,
    pub connections: usize,
    /// wrk's `-d`, in seconds (it takes whole seconds).
    pub seconds: u64,
    pub requests: u64,
    pub calls_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// wrk's CPU per call (its whole process).
    pub client_cpu_us: f64,
    /// CPU per call of the contender's HTTP process alone.
    pub front_cpu_us: f64,
    /// CPU per call of the contender and its descendants.
    pub tree_cpu_us: f64,
}

/// What one wrk run printed, read.
#[derive(Debug, Default, PartialEq)]
pub struct Output {
    pub requests: u64,
    pub calls_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Answers the script found wrong, non-2xx/3xx answers and socket
    /// errors.
    pub failures: u64,
    /// What the first wrong answer was (status and the body's start).
    pub first_failure: Option<String>,
}

/// Whether the wrk pass runs: unless `EXTPOOL_BENCH_WRK=0`.
pub fn enabled() -> bool {
    std::env::var("EXTPOOL_BENCH_WRK").map_or(true, |v| v.trim() != "0")
}

/// The contenders wrk drives: extpool (both eras), the testkit on rmcp's
/// HTTP, the stdio hop floor and the fixed-body floors (wrk's ceiling).
pub fn drives(c: Contender) -> bool {
    matches!(
        c,
        Contender::Nginx
            | Contender::Fixed
            | Contender::Floor
            | Contender::Hop
            | Contender::Extpool
            | Contender::ExtpoolBefore
            | Contender::Extpool2026
    )
}

/// wrk on the `PATH`; a missing one fails the run, saying how to get it
/// or skip it.
pub fn binary() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("wrk"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "wrk missing: run `scripts/peers.sh --bench` (it installs Debian's wrk), or skip the wrk pass with EXTPOOL_BENCH_WRK=0"
            )
        })
}

/// wrk's `-d` for a level measured `length`: whole seconds, at least one.
pub fn seconds(length: Duration) -> u64 {
    length.as_millis().div_ceil(1000).max(1) as u64
}

/// `s` as a Lua string literal.
fn lua_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
    out
}

/// The id the body is built with, where the script puts its own.
const ID_MARK: u64 = 987_654_321;

/// The Lua script of a run against `target`: its headers, its calls
/// numbered (each thread from its own billion), and every answer checked.
pub fn script(target: &Target) -> String {
    let body = loadgen::call_body(target, ID_MARK);
    let mark = format!("\"id\":{ID_MARK}");
    let at = body.find(&mark).expect("the body carries its id");
    let prefix = format!("{}\"id\":", &body[..at]);
    let suffix = &body[at + mark.len()..];
    let mut lua = String::from("wrk.method = \"POST\"\n");
    for (name, value) in loadgen::headers(target, "tools/call") {
        lua.push_str(&format!(
            "wrk.headers[{}] = {}\n",
            lua_string(name),
            lua_string(value)
        ));
    }
    lua.push_str(&format!(
        "local prefix = {}\nlocal suffix = {}\nlocal result_mark = {}\nlocal error_mark = {}\n",
        lua_string(&prefix),
        lua_string(suffix),
        lua_string(loadgen::RESULT_MARK),
        lua_string(loadgen::TOOL_ERROR_MARK),
    ));
    lua.push_str(
        r#"local threads = {}
function setup(thread)
   table.insert(threads, thread)
   thread:set("base", #threads * 1000000000)
end
base = 0
bad = 0
first_bad = nil
local n = 0
function request()
   n = n + 1
   return wrk.format(nil, nil, nil, prefix .. (base + n) .. suffix)
end
function response(status, headers, body)
   if status ~= 200 or not string.find(body, result_mark, 1, true)
      or string.find(body, error_mark, 1, true) then
      bad = bad + 1
      if first_bad == nil then
         first_bad = status .. " " .. string.sub(body, 1, 300)
      end
   end
end
function done(summary, latency, requests)
   local failed = 0
   local first = nil
   for _, t in ipairs(threads) do
      failed = failed + t:get("bad")
      first = first or t:get("first_bad")
   end
   io.write(string.format("extpool-wrk failed %d\n", failed))
   if first then
      io.write("extpool-wrk first-failure " .. string.gsub(first, "[\r\n]", " ") .. "\n")
   end
end
"#,
    );
    lua
}

/// A duration as wrk prints it (`245.00us`, `1.20ms`, `2.00s`), in µs.
fn micros(text: &str) -> Option<f64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let n: f64 = number.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(n * scale)
}

/// Reads wrk's output (with `--latency` and the script's lines); `Err`
/// names what is missing.
pub fn parse(stdout: &str) -> Result<Output, String> {
    let mut out = Output::default();
    let (mut rps, mut p50, mut p99, mut requests, mut checked) = (None, None, None, None, None);
    let (mut non_2xx, mut socket) = (0, 0);
    for line in stdout.lines() {
        let line = line.trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(v) = line.strip_prefix("Requests/sec:") {
            rps = v.trim().parse().ok();
        } else if words.first() == Some(&"50%") {
            p50 = words.get(1).and_then(|w| micros(w));
        } else if words.first() == Some(&"99%") {
            p99 = words.get(1).and_then(|w| micros(w));
        } else if words.get(1..3) == Some(&["requests", "in"]) {
            requests = words[0].parse().ok();
        } else if let Some(v) = line.strip_prefix("Non-2xx or 3xx responses:") {
            non_2xx = v.trim().parse::<u64>().unwrap_or(1);
        } else if let Some(v) = line.strip_prefix("Socket errors:") {
            // `connect 0, read 0, write 0, timeout 0`
            socket = v
                .split(',')
                .filter_map(|part| part.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
        } else if let Some(v) = line.strip_prefix("extpool-wrk failed ") {
            checked = v.trim().parse::<u64>().ok();
        } else if let Some(v) = line.strip_prefix("extpool-wrk first-failure ") {
            out.first_failure = Some(v.to_owned());
        }
    }
    out.calls_per_sec = rps.ok_or("no Requests/sec line")?;
    out.p50_us = p50.ok_or("no 50% line (--latency)")?;
    out.p99_us = p99.ok_or("no 99% line (--latency)")?;
    out.requests = requests.ok_or("no `N requests in` line")?;
    // The script checked every answer, the non-2xx among them again: the
    // larger count of the two is kept, not their sum.
    let checked = checked.ok_or("no line of the script's check (its done())")?;
    out.failures = socket + non_2xx.max(checked);
    Ok(out)
}

/// Runs wrk (`wrk` its path) with `script` on `target` over `conns`
/// connections for `seconds`: its output read, and its CPU time.
pub fn run(
    wrk: &Path,
    target: &Target,
    script: &Path,
    conns: usize,
    seconds: u64,
) -> (Output, Duration) {
    let url = format!("http://{}{}", target.addr, target.path);
    let child = Command::new(wrk)
        .args([
            "-t1",
            "-c",
            &conns.to_string(),
            "-d",
            &format!("{seconds}s"),
        ])
        .args(["--timeout", TIMEOUT, "--latency", "-s"])
        .arg(script)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start wrk ({}): {e}", wrk.display()));
    // Its CPU is read once it exited and before it is reaped (a zombie's
    // `/proc/<pid>/stat` keeps its times); its output is a few hundred
    // bytes, well within a pipe's buffer.
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("wrk's pid");
    loop {
        use rustix::process::{WaitId, WaitIdOptions, waitid};
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => panic!("waiting for wrk: {e}"),
            Ok(_) => break,
        }
    }
    let cpu = super::cpu::of(child.id()).0;
    let output = child.wait_with_output().expect("wrk's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "wrk against {url} failed ({}): {stdout}{stderr}",
        output.status
    );
    let read = parse(&stdout)
        .unwrap_or_else(|why| panic!("wrk's output against {url}: {why}:\n{stdout}{stderr}"));
    (read, cpu)
}
