//! The gateway benchmark's Markdown: figures per contender, the p50 each
//! adds over direct stdio, and issue 10's targets (ratios taken within each
//! round, where every contender ran under the same machine load).

use std::fmt::Write as _;

use super::contenders::Contender;
use super::{INFLIGHT, Sample};

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.0} ({lo:.0}–{hi:.0})", median(v.to_vec()))
}

fn pick<'a>(s: &'a [Sample], c: Contender, mode: &str) -> Vec<&'a Sample> {
    s.iter()
        .filter(|x| x.contender == c.name() && x.mode == mode)
        .collect()
}

fn of<'a>(s: &'a [Sample], round: usize, c: Contender, mode: &str) -> Option<&'a Sample> {
    s.iter()
        .find(|x| x.round == round && x.contender == c.name() && x.mode == mode)
}

fn rounds(s: &[Sample]) -> Vec<usize> {
    let mut r: Vec<usize> = s.iter().map(|x| x.round).collect();
    r.sort_unstable();
    r.dedup();
    r
}

/// p50 over direct stdio, per round (sequential).
fn added_p50(s: &[Sample], c: Contender) -> Vec<f64> {
    rounds(s)
        .into_iter()
        .filter_map(|r| {
            let base = of(s, r, Contender::Stdio, "sequential")?;
            Some(of(s, r, c, "sequential")?.p50_us - base.p50_us)
        })
        .collect()
}

/// Per round: extpool's calls/s at 32 in flight ÷ `den(round)`.
fn ratio(s: &[Sample], den: impl Fn(usize) -> Option<f64>) -> Vec<f64> {
    rounds(s)
        .into_iter()
        .filter_map(|r| Some(of(s, r, Contender::Extpool, "concurrent")?.calls_per_sec / den(r)?))
        .collect()
}

fn target(out: &mut String, what: &str, v: &[f64], unit: &str, met: impl Fn(f64) -> bool) {
    let m = median(v.to_vec());
    let verdict = if v.is_empty() {
        "not measured"
    } else if met(m) {
        "met"
    } else {
        "NOT met"
    };
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let _ = writeln!(
        out,
        "| {what} | {m:.2}{unit} ({lo:.2}–{hi:.2}) | {verdict} |"
    );
}

/// The whole report.
pub fn markdown(s: &[Sample], wanted: &[Contender], machine: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "#### Gateway: `tools/call echo` in front of the testkit stdio server\n"
    );
    let _ = writeln!(out, "{machine}. Medians over rounds, (min–max).\n");
    let _ = writeln!(
        out,
        "| contender | mode | calls/s | p50 µs | p99 µs | p50 added over stdio µs |\n|---|---|---:|---:|---:|---:|"
    );
    for &c in wanted {
        for (mode, label) in [
            ("sequential", "sequential".to_owned()),
            ("concurrent", format!("{INFLIGHT} in flight")),
        ] {
            let x = pick(s, c, mode);
            if x.is_empty() {
                continue;
            }
            let cps: Vec<f64> = x.iter().map(|x| x.calls_per_sec).collect();
            let p50: Vec<f64> = x.iter().map(|x| x.p50_us).collect();
            let p99: Vec<f64> = x.iter().map(|x| x.p99_us).collect();
            let added = if mode == "sequential" && c != Contender::Stdio {
                spread(&added_p50(s, c))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {} | {label} | {} | {} | {} | {added} |",
                c.name(),
                spread(&cps),
                spread(&p50),
                spread(&p99)
            );
        }
    }
    let peers: Vec<Contender> = wanted.iter().copied().filter(|c| c.is_peer()).collect();
    let fastest_peer = |r: usize| {
        peers
            .iter()
            .filter_map(|&p| of(s, r, p, "concurrent").map(|x| x.calls_per_sec))
            .reduce(f64::max)
    };
    let floor = |r: usize| of(s, r, Contender::Floor, "concurrent").map(|x| x.calls_per_sec);
    let _ = writeln!(
        out,
        "\n#### Targets (issue 10; ratios within each round, median (min–max))\n"
    );
    let _ = writeln!(out, "| target | measured | met |\n|---|---:|---|");
    target(
        &mut out,
        &format!("extpool calls/s ÷ fastest peer's, {INFLIGHT} in flight ≥ 10×"),
        &ratio(s, fastest_peer),
        "×",
        |m| m >= 10.0,
    );
    target(
        &mut out,
        &format!("extpool calls/s ÷ rmcp-direct floor's, {INFLIGHT} in flight ≥ 0.7×"),
        &ratio(s, floor),
        "×",
        |m| m >= 0.7,
    );
    let added: Vec<f64> = added_p50(s, Contender::Extpool)
        .iter()
        .map(|us| us / 1000.0)
        .collect();
    target(
        &mut out,
        "extpool p50 added over direct stdio (sequential) ≤ 0.3 ms",
        &added,
        " ms",
        |m| m <= 0.3,
    );
    out
}
