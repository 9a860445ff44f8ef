//! The wrk pass beside the load generator's figures: each contender wrk
//! drove at 1 and 32 connections, both generators' calls/s, p50, p99 and
//! CPU per call with the ratio wrk ÷ load generator taken within each
//! round, where they disagree by more than [`DISAGREE`], wrk's ceiling
//! (against the fixed-body floors), and the targets of the issue (one way
//! in) as each generator measures them.

use std::fmt::Write as _;

use super::contenders::{Contender, Upstream};
use super::report::{median, spread, target};
use super::wrk::{self, WrkSample};
use super::{INFLIGHT, Sample};

/// How far wrk ÷ load generator may stray from 1 before the two are said
/// to disagree.
const DISAGREE: f64 = 0.10;

/// One measured level, from either generator.
#[derive(Clone, Copy)]
struct Point {
    round: usize,
    upstream: &'static str,
    contender: &'static str,
    connections: usize,
    calls_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    front_cpu_us: f64,
    client_cpu_us: f64,
}

impl From<&Sample> for Point {
    fn from(x: &Sample) -> Self {
        Point {
            round: x.round,
            upstream: x.upstream,
            contender: x.contender,
            connections: x.connections,
            calls_per_sec: x.calls_per_sec,
            p50_us: x.p50_us,
            p99_us: x.p99_us,
            front_cpu_us: x.front_cpu_us,
            client_cpu_us: x.client_cpu_us,
        }
    }
}

impl From<&WrkSample> for Point {
    fn from(x: &WrkSample) -> Self {
        Point {
            round: x.round,
            upstream: x.upstream,
            contender: x.contender,
            connections: x.connections,
            calls_per_sec: x.calls_per_sec,
            p50_us: x.p50_us,
            p99_us: x.p99_us,
            front_cpu_us: x.front_cpu_us,
            client_cpu_us: x.client_cpu_us,
        }
    }
}

type Metric = fn(&Point) -> f64;

/// What the table compares: its label, digits, and whether it is a
/// figure of the contender (the generators' own CPU is expected to
/// differ, and is not said to disagree).
const METRICS: [(&str, Metric, usize, bool); 5] = [
    ("calls/s", |p| p.calls_per_sec, 0, true),
    ("p50 µs", |p| p.p50_us, 0, true),
    ("p99 µs", |p| p.p99_us, 0, true),
    ("contender's own CPU µs/call", |p| p.front_cpu_us, 1, true),
    ("generator's CPU µs/call", |p| p.client_cpu_us, 1, false),
];

/// The points of `c` behind `upstream` (a floor's are its own) at `conns`.
fn pick(s: &[Point], c: Contender, upstream: Upstream, conns: usize) -> Vec<Point> {
    let key = if c.is_floor() { "none" } else { upstream.key() };
    s.iter()
        .filter(|x| x.contender == c.name() && x.upstream == key && x.connections == conns)
        .copied()
        .collect()
}

fn at(s: &[Point], round: usize, c: Contender, upstream: Upstream, conns: usize) -> Option<Point> {
    pick(s, c, upstream, conns)
        .into_iter()
        .find(|x| x.round == round)
}

fn rounds(s: &[Point]) -> Vec<usize> {
    let mut r: Vec<usize> = s.iter().map(|x| x.round).collect();
    r.sort_unstable();
    r.dedup();
    r
}

/// Per round where both were measured: `num(round) ÷ den(round)`.
fn ratios(
    s: &[Point],
    num: impl Fn(usize) -> Option<f64>,
    den: impl Fn(usize) -> Option<f64>,
) -> Vec<f64> {
    rounds(s)
        .into_iter()
        .filter_map(|r| Some(num(r)? / den(r)?))
        .collect()
}

/// Both generators' points, and which generator each is.
struct Both {
    load: Vec<Point>,
    wrk: Vec<Point>,
}

impl Both {
    /// wrk ÷ load generator of `f` for `c` at `conns`, per round.
    fn ratio(&self, c: Contender, u: Upstream, conns: usize, f: Metric) -> Vec<f64> {
        let all: Vec<Point> = self.load.iter().chain(&self.wrk).copied().collect();
        ratios(
            &all,
            |r| at(&self.wrk, r, c, u, conns).map(|p| f(&p)),
            |r| at(&self.load, r, c, u, conns).map(|p| f(&p)),
        )
    }
}

/// A cell: the load generator's median / wrk's median (wrk ÷ load
/// generator within each round), and the disagreement if any.
fn cell(
    both: &Both,
    (c, u, conns): (Contender, Upstream, usize),
    (label, f, digits, compared): (&str, Metric, usize, bool),
) -> (String, Option<String>) {
    let load: Vec<f64> = pick(&both.load, c, u, conns).iter().map(f).collect();
    let wrk: Vec<f64> = pick(&both.wrk, c, u, conns).iter().map(f).collect();
    let ratio = both.ratio(c, u, conns, f);
    let m = median(ratio.clone());
    let text = format!(
        "{:.digits$} / {:.digits$} · {}×",
        median(load),
        median(wrk),
        spread(&ratio, 2)
    );
    let off = compared && (m - 1.0).abs() > DISAGREE;
    let note = off.then(|| format!("{label} wrk {:+.0}%", (m - 1.0) * 100.0));
    (text, note)
}

fn table(out: &mut String, both: &Both, wanted: &[Contender], u: Upstream) -> Vec<String> {
    let _ = writeln!(
        out,
        "\n#### wrk beside the load generator ({}): load generator / wrk · wrk ÷ load generator within each round, median (min–max)\n",
        u.name()
    );
    let heads: Vec<&str> = METRICS.iter().map(|m| m.0).collect();
    let _ = writeln!(
        out,
        "| contender | connections | {} | where they disagree (> {:.0}%) |\n|---|---:|{}---|",
        heads.join(" | "),
        DISAGREE * 100.0,
        "---:|".repeat(METRICS.len())
    );
    let mut disagreements = Vec::new();
    for &c in wanted.iter().filter(|&&c| wrk::drives(c)) {
        for conns in wrk::LEVELS {
            if pick(&both.wrk, c, u, conns).is_empty() {
                continue;
            }
            let cells: Vec<(String, Option<String>)> = METRICS
                .iter()
                .map(|&m| cell(both, (c, u, conns), m))
                .collect();
            let notes: Vec<String> = cells.iter().filter_map(|x| x.1.clone()).collect();
            let texts: Vec<&str> = cells.iter().map(|x| x.0.as_str()).collect();
            let said = if notes.is_empty() {
                "–".to_owned()
            } else {
                notes.join("; ")
            };
            if !notes.is_empty() {
                disagreements.push(format!("{} at {conns}: {said}", c.name()));
            }
            let _ = writeln!(
                out,
                "| {} | {conns} | {} | {said} |",
                c.name(),
                texts.join(" | ")
            );
        }
    }
    disagreements
}

/// wrk's ceiling: its calls/s against the fixed-body floors at
/// [`INFLIGHT`] connections, and its CPU a call, beside the load
/// generator's.
fn ceiling(out: &mut String, both: &Both) {
    let lines: Vec<String> = [Contender::Nginx, Contender::Fixed]
        .into_iter()
        .filter_map(|c| {
            let w = pick(&both.wrk, c, Upstream::Testkit, INFLIGHT);
            let l = pick(&both.load, c, Upstream::Testkit, INFLIGHT);
            (!w.is_empty()).then(|| {
                let v = |p: &[Point], f: Metric| p.iter().map(f).collect::<Vec<f64>>();
                format!(
                    "{}: wrk {} calls/s using {} µs of CPU a call (the load generator {} calls/s, {} µs)",
                    c.name(),
                    spread(&v(&w, |p| p.calls_per_sec), 0),
                    spread(&v(&w, |p| p.client_cpu_us), 1),
                    spread(&v(&l, |p| p.calls_per_sec), 0),
                    spread(&v(&l, |p| p.client_cpu_us), 1),
                )
            })
        })
        .collect();
    if !lines.is_empty() {
        let _ = writeln!(
            out,
            "\nwrk's ceiling (fixed-body servers, no MCP, {INFLIGHT} connections): {}.",
            lines.join("; ")
        );
    }
}

/// The call targets as each generator measures them, for extpool
/// in both eras.
fn targets(out: &mut String, both: &Both, wanted: &[Contender]) {
    let (raw, kit) = (Upstream::RawEcho, Upstream::Testkit);
    let subjects: Vec<Contender> = [
        Contender::Extpool,
        Contender::ExtpoolBefore,
        Contender::Extpool2026,
    ]
    .into_iter()
    .filter(|c| wanted.contains(c))
    .collect();
    if subjects.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n#### The targets (one way in) by each generator; ratios within each round, median (min–max)\n"
    );
    let _ = writeln!(out, "| target | measured | met |\n|---|---:|---|");
    for (name, points) in [("load generator", &both.load), ("wrk", &both.wrk)] {
        for &ext in &subjects {
            let of = |c, u, conns, r, f: Metric| at(points, r, c, u, conns).map(|p| f(&p));
            let who = format!("{} ({name})", ext.name());
            let cpu: Vec<f64> = pick(points, ext, raw, INFLIGHT)
                .iter()
                .map(|p| p.front_cpu_us)
                .collect();
            target(
                out,
                &format!("{who}: own CPU µs a call, {INFLIGHT} connections, raw echo ≤ 25"),
                &cpu,
                |m| m <= 25.0,
            );
            target(
                out,
                &format!(
                    "{who}: calls/s (testkit upstream) ÷ testkit on rmcp HTTP's, {INFLIGHT} connections ≥ 1.0×"
                ),
                &ratios(
                    points,
                    |r| of(ext, kit, INFLIGHT, r, |p| p.calls_per_sec),
                    |r| of(Contender::Floor, kit, INFLIGHT, r, |p| p.calls_per_sec),
                ),
                |m| m >= 1.0,
            );
            for u in [raw, kit] {
                target(
                    out,
                    &format!(
                        "{who}: p50 ÷ the stdio hop floor's, one call at a time, {} ≤ 1.2×",
                        u.name()
                    ),
                    &ratios(
                        points,
                        |r| of(ext, u, 1, r, |p| p.p50_us),
                        |r| of(Contender::Hop, u, 1, r, |p| p.p50_us),
                    ),
                    |m| m <= 1.2,
                );
            }
        }
    }
}

/// The wrk section of the report (empty when wrk did not run).
pub fn markdown(
    samples: &[Sample],
    wrk_samples: &[WrkSample],
    wanted: &[Contender],
    upstreams: &[Upstream],
) -> String {
    let mut out = String::new();
    if wrk_samples.is_empty() {
        return out;
    }
    let both = Both {
        load: samples.iter().map(Point::from).collect(),
        wrk: wrk_samples.iter().map(Point::from).collect(),
    };
    let seconds = wrk_samples.first().map_or(0, |w| w.seconds);
    let _ = writeln!(
        out,
        "\n### wrk (`wrk -t1 -c N -d {seconds}s --latency`, the same body and headers, every answer checked)"
    );
    ceiling(&mut out, &both);
    let mut disagreements = Vec::new();
    for &u in upstreams {
        disagreements.extend(table(&mut out, &both, wanted, u));
    }
    disagreements.sort();
    disagreements.dedup();
    if disagreements.is_empty() {
        let _ = writeln!(
            out,
            "\nThe two generators agree within {:.0}% on every figure.",
            DISAGREE * 100.0
        );
    } else {
        let _ = writeln!(
            out,
            "\nWhere the two disagree on the contender by more than {:.0}%: {}.",
            DISAGREE * 100.0,
            disagreements.join("; ")
        );
    }
    targets(&mut out, &both, wanted);
    out
}
