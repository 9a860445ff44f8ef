//! The gateway benchmark's Markdown and chart: calls/s per contender at
//! every connection count, latency one call at a time, CPU per call of
//! the load generator and of each contender, and the call-path issue's
//! targets as ratios taken within each round (where every contender ran
//! under the same machine load).

use std::fmt::Write as _;

use super::contenders::{Contender, Upstream};
use super::idle::Step;
use super::{INFLIGHT, LEVELS, Sample};

pub fn median(mut v: Vec<f64>) -> f64 {
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

pub fn spread(v: &[f64], digits: usize) -> String {
    if v.is_empty() {
        return "–".to_owned();
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let m = median(v.to_vec());
    format!("{m:.digits$} ({lo:.digits$}–{hi:.digits$})")
}

/// The samples of `c` behind `upstream` (a floor's are its own) at `conns`.
fn pick(s: &[Sample], c: Contender, upstream: Upstream, conns: usize) -> Vec<&Sample> {
    let key = if c.is_floor() { "none" } else { upstream.key() };
    s.iter()
        .filter(|x| x.contender == c.name() && x.upstream == key && x.connections == conns)
        .collect()
}

fn of(
    s: &[Sample],
    round: usize,
    c: Contender,
    upstream: Upstream,
    conns: usize,
) -> Option<&Sample> {
    pick(s, c, upstream, conns)
        .into_iter()
        .find(|x| x.round == round)
}

fn rounds(s: &[Sample]) -> Vec<usize> {
    let mut r: Vec<usize> = s.iter().map(|x| x.round).collect();
    r.sort_unstable();
    r.dedup();
    r
}

fn values(x: &[&Sample], f: impl Fn(&Sample) -> f64) -> Vec<f64> {
    x.iter().map(|x| f(x)).collect()
}

fn throughput_table(out: &mut String, s: &[Sample], wanted: &[Contender], upstream: Upstream) {
    let _ = writeln!(
        out,
        "\n#### calls/s by connections (one call in flight on each), MCP contenders in front of the {}\n",
        upstream.name()
    );
    let head: Vec<String> = LEVELS.iter().map(|l| format!("{l}")).collect();
    let _ = writeln!(
        out,
        "| contender | {} | failed |\n|---|{}---:|",
        head.join(" | "),
        "---:|".repeat(LEVELS.len())
    );
    for &c in wanted {
        let cells: Vec<String> = LEVELS
            .iter()
            .map(|&l| spread(&values(&pick(s, c, upstream, l), |x| x.calls_per_sec), 0))
            .collect();
        let failed: usize = LEVELS
            .iter()
            .flat_map(|&l| pick(s, c, upstream, l))
            .map(|x| x.failures)
            .sum();
        if cells.iter().all(|c| c == "–") {
            continue;
        }
        let _ = writeln!(out, "| {} | {} | {failed} |", c.name(), cells.join(" | "));
    }
}

fn latency_and_cpu_table(out: &mut String, s: &[Sample], wanted: &[Contender], upstream: Upstream) {
    let _ = writeln!(
        out,
        "\n#### One call at a time, and CPU per call at {INFLIGHT} connections ({})\n",
        upstream.name()
    );
    let _ = writeln!(
        out,
        "| contender | p50 µs (1 conn.) | p99 µs (1 conn.) | HTTP process's thread switches a call (1 conn.) | p50 µs ({INFLIGHT}) | load generator CPU µs/call | contender's HTTP process CPU µs/call | with its upstream µs/call |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for &c in wanted {
        let one = pick(s, c, upstream, 1);
        let many = pick(s, c, upstream, INFLIGHT);
        if one.is_empty() && many.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name(),
            spread(&values(&one, |x| x.p50_us), 0),
            spread(&values(&one, |x| x.p99_us), 0),
            spread(&values(&one, |x| x.front_switches), 1),
            spread(&values(&many, |x| x.p50_us), 0),
            spread(&values(&many, |x| x.client_cpu_us), 1),
            spread(&values(&many, |x| x.front_cpu_us), 1),
            spread(&values(&many, |x| x.tree_cpu_us), 1),
        );
    }
}

pub fn target(out: &mut String, what: &str, v: &[f64], met: impl Fn(f64) -> bool) {
    let m = median(v.to_vec());
    let verdict = if v.is_empty() {
        "not measured"
    } else if met(m) {
        "met"
    } else {
        "NOT met"
    };
    let _ = writeln!(out, "| {what} | {} | {verdict} |", spread(v, 2));
}

/// Per round: `num(round) ÷ den(round)` where both were measured.
fn per_round(
    s: &[Sample],
    num: impl Fn(usize) -> Option<f64>,
    den: impl Fn(usize) -> Option<f64>,
) -> Vec<f64> {
    rounds(s)
        .into_iter()
        .filter_map(|r| Some(num(r)? / den(r)?))
        .collect()
}

/// The call-path issue's targets as `ext` meets them: extpool, or the
/// stdio hop floor (what any gateway with a stdio hop reaches on this
/// machine and stack, so what the targets ask above it shows).
fn targets(out: &mut String, s: &[Sample], wanted: &[Contender], ext: Contender) {
    let peers: Vec<Contender> = wanted.iter().copied().filter(|c| c.is_peer()).collect();
    let at = |c, u, l, r, f: fn(&Sample) -> f64| of(s, r, c, u, l).map(f);
    let cps = |x: &Sample| x.calls_per_sec;
    let p50 = |x: &Sample| x.p50_us;
    let fastest = |u, l, r, f: fn(&Sample) -> f64, best: fn(f64, f64) -> f64| {
        peers.iter().filter_map(|&p| at(p, u, l, r, f)).reduce(best)
    };
    let (raw, kit) = (Upstream::RawEcho, Upstream::Testkit);
    if !wanted.contains(&ext) {
        return;
    }
    let subject = match ext {
        Contender::Extpool => "extpool",
        Contender::ExtpoolBefore => "extpool before",
        _ => "the hop floor",
    };
    let _ = writeln!(
        out,
        "\n#### Targets (the call-path issue), as {} meets them; ratios within each round, median (min–max)\n",
        ext.name()
    );
    let _ = writeln!(out, "| target | measured | met |\n|---|---:|---|");
    target(
        out,
        &format!("{subject} calls/s ÷ fastest peer's, {INFLIGHT} connections, raw echo ≥ 8×"),
        &per_round(
            s,
            |r| at(ext, raw, INFLIGHT, r, cps),
            |r| fastest(raw, INFLIGHT, r, cps, f64::max),
        ),
        |m| m >= 8.0,
    );
    for u in [raw, kit] {
        target(
            out,
            &format!(
                "{subject} p50 ÷ fastest peer's, one call at a time, {} ≤ 0.4×",
                u.name()
            ),
            &per_round(
                s,
                |r| at(ext, u, 1, r, p50),
                |r| fastest(u, 1, r, p50, f64::min),
            ),
            |m| m <= 0.4,
        );
    }
    target(
        out,
        &format!(
            "{subject} p50 (testkit upstream) ÷ testkit on rmcp HTTP's, one call at a time ≤ 1.5×"
        ),
        &per_round(
            s,
            |r| at(ext, kit, 1, r, p50),
            |r| at(Contender::Floor, kit, 1, r, p50),
        ),
        |m| m <= 1.5,
    );
    target(
        out,
        &format!(
            "{subject} calls/s (testkit upstream) ÷ testkit on rmcp HTTP's, {INFLIGHT} connections ≥ 0.8×"
        ),
        &per_round(
            s,
            |r| at(ext, kit, INFLIGHT, r, cps),
            |r| at(Contender::Floor, kit, INFLIGHT, r, cps),
        ),
        |m| m >= 0.8,
    );
    for floor in [Contender::Nginx, Contender::Fixed] {
        target(
            out,
            &format!(
                "{subject} calls/s (raw echo) ÷ {}'s, {INFLIGHT} connections ≥ 0.3×",
                floor.name()
            ),
            &per_round(
                s,
                |r| at(ext, raw, INFLIGHT, r, cps),
                |r| at(floor, raw, INFLIGHT, r, cps),
            ),
            |m| m >= 0.3,
        );
    }
    let cpu: Vec<f64> = rounds(s)
        .into_iter()
        .filter_map(|r| at(ext, raw, INFLIGHT, r, |x| x.front_cpu_us))
        .collect();
    target(
        out,
        &format!("{subject}'s own CPU µs per call, {INFLIGHT} connections, raw echo ≤ 25"),
        &cpu,
        |m| m <= 25.0,
    );
    if ext == Contender::Extpool {
        variants(out, s);
    }
}

/// extpool run another way (OTLP to a collector that is down, 2026-07-28
/// requests) against extpool itself, within each round.
fn variants(out: &mut String, s: &[Sample]) {
    let (ext, raw) = (Contender::Extpool, Upstream::RawEcho);
    let cps = |x: &Sample| x.calls_per_sec;
    let at = |c, r| of(s, r, c, raw, INFLIGHT).map(cps);
    let vs_extpool = |other: Contender| per_round(s, |r| at(other, r), |r| at(ext, r));
    target(
        out,
        &format!(
            "extpool with OTLP to a collector that is down ÷ extpool, calls/s, {INFLIGHT} connections, raw echo ≥ 0.95×"
        ),
        &vs_extpool(Contender::ExtpoolOtlp),
        |m| m >= 0.95,
    );
    target(
        out,
        &format!(
            "extpool with 2026-07-28 requests ÷ with a session, calls/s, {INFLIGHT} connections, raw echo (our aim, not the issue's) ≥ 0.8×"
        ),
        &vs_extpool(Contender::Extpool2026),
        |m| m >= 0.8,
    );
}

/// extpool ÷ the hop floor, within each round: what the gateway's own work
/// adds to what a stdio hop costs anyway (not a target: where it stands).
fn above_hop(out: &mut String, s: &[Sample], wanted: &[Contender]) {
    let (ext, hop) = (Contender::Extpool, Contender::Hop);
    if !wanted.contains(&ext) || !wanted.contains(&hop) {
        return;
    }
    let _ = writeln!(
        out,
        "\n#### extpool ÷ the stdio hop floor (ratios within each round, median (min–max))\n"
    );
    let _ = writeln!(out, "| | raw echo | testkit |\n|---|---:|---:|");
    type Row = (&'static str, usize, fn(&Sample) -> f64);
    let rows: [Row; 3] = [
        ("p50, one call at a time", 1, |x| x.p50_us),
        ("calls/s, {INFLIGHT} connections", INFLIGHT, |x| {
            x.calls_per_sec
        }),
        (
            "own CPU µs a call, {INFLIGHT} connections",
            INFLIGHT,
            |x| x.front_cpu_us,
        ),
    ];
    for (what, conns, f) in rows {
        let cells: Vec<String> = Upstream::ALL
            .into_iter()
            .map(|u| {
                let v = per_round(
                    s,
                    |r| of(s, r, ext, u, conns).map(f),
                    |r| of(s, r, hop, u, conns).map(f),
                );
                spread(&v, 2)
            })
            .collect();
        let what = what.replace("{INFLIGHT}", &INFLIGHT.to_string());
        let _ = writeln!(out, "| {what} | {} |", cells.join(" | "));
    }
}

/// The whole report.
pub fn markdown(
    s: &[Sample],
    wanted: &[Contender],
    upstreams: &[Upstream],
    machine: &str,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Gateway: `tools/call echo`, one session, 1–512 keep-alive connections\n"
    );
    let _ = writeln!(out, "{machine}. Medians over rounds, (min–max).");
    let ceiling: Vec<String> = [Contender::Nginx, Contender::Fixed]
        .into_iter()
        .filter_map(|c| {
            let x = pick(s, c, Upstream::Testkit, INFLIGHT);
            (!x.is_empty()).then(|| {
                format!(
                    "{}: {} calls/s at {INFLIGHT} connections, the load generator using {} µs of CPU a call",
                    c.name(),
                    spread(&values(&x, |x| x.calls_per_sec), 0),
                    spread(&values(&x, |x| x.client_cpu_us), 1)
                )
            })
        })
        .collect();
    if !ceiling.is_empty() {
        let _ = writeln!(
            out,
            "\nThe load generator's ceiling (fixed-body servers, no MCP): {}.",
            ceiling.join("; ")
        );
    }
    for &u in upstreams {
        throughput_table(&mut out, s, wanted, u);
        latency_and_cpu_table(&mut out, s, wanted, u);
    }
    targets(&mut out, s, wanted, Contender::Extpool);
    targets(&mut out, s, wanted, Contender::ExtpoolBefore);
    targets(&mut out, s, wanted, Contender::Hop);
    above_hop(&mut out, s, wanted);
    out
}

/// The most memory an open idle session of extpool may hold (the issue's
/// target, at each step).
pub const IDLE_TARGET_BYTES: f64 = 4096.0;

/// The idle-session table, with the target's verdict for extpool at each
/// step (every session asked opened, and at most [`IDLE_TARGET_BYTES`]
/// each); the testkit on rmcp's HTTP is the reference beside it.
pub fn idle(steps: &[Step]) -> String {
    let mut out = String::new();
    if steps.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n#### Open idle MCP sessions (session-era `initialize` on `/mcp`, no calls; the verdict on anonymous memory: the whole resident set also counts the binary's code the first requests page in)\n"
    );
    let _ = writeln!(
        out,
        "| contender | sessions asked | opened | RSS MiB | RSS above the process before, MiB | anonymous memory above it, MiB | anonymous a session | ≤ {:.0} KiB a session |\n|---|---:|---:|---:|---:|---:|---:|---|",
        IDLE_TARGET_BYTES / 1024.0
    );
    for s in steps {
        let judged = [Contender::Extpool, Contender::ExtpoolBefore].map(Contender::name);
        let verdict = if !judged.contains(&s.contender) {
            "– (reference)".to_owned()
        } else if s.opened < s.sessions {
            format!("NOT met (only {} of {} opened)", s.opened, s.sessions)
        } else if s.bytes_per_session <= IDLE_TARGET_BYTES {
            "met".to_owned()
        } else {
            "NOT met".to_owned()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} KiB | {verdict} |",
            s.contender,
            s.sessions,
            s.opened,
            s.rss_kib as f64 / 1024.0,
            s.above_kib as f64 / 1024.0,
            s.anon_above_kib as f64 / 1024.0,
            s.bytes_per_session / 1024.0
        );
    }
    out
}

const COLOURS: [&str; 10] = [
    "#888888", "#bbbbbb", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#17becf",
];

/// An SVG chart of median calls/s against connections (log scales) for
/// every contender in front of `upstream`, the floors included.
pub fn svg(s: &[Sample], wanted: &[Contender], upstream: Upstream) -> String {
    let (w, h, left, bottom, top, right) = (760.0, 460.0, 70.0, 50.0, 40.0, 230.0);
    let lines: Vec<(Contender, Vec<(usize, f64)>)> = wanted
        .iter()
        .map(|&c| {
            let pts = LEVELS
                .iter()
                .filter_map(|&l| {
                    let v = values(&pick(s, c, upstream, l), |x| x.calls_per_sec);
                    (!v.is_empty()).then(|| (l, median(v)))
                })
                .collect();
            (c, pts)
        })
        .filter(|(_, p): &(Contender, Vec<(usize, f64)>)| !p.is_empty())
        .collect();
    let max = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(1.0_f64, f64::max);
    let (lo, hi) = (100.0_f64.log10(), max.log10().ceil().max(3.0));
    let x = |l: usize| left + (l as f64).log2() / 9.0 * (w - left - right);
    let y = |v: f64| top + (1.0 - (v.max(100.0).log10() - lo) / (hi - lo)) * (h - top - bottom);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"14\">calls/s against connections, tools/call echo, {} behind MCP contenders</text>\n",
        upstream.name()
    );
    for &l in &LEVELS {
        let _ = writeln!(
            out,
            "<line x1=\"{0}\" x2=\"{0}\" y1=\"{top}\" y2=\"{1}\" stroke=\"#eee\"/><text x=\"{0}\" y=\"{2}\" text-anchor=\"middle\">{l}</text>",
            x(l),
            h - bottom,
            h - bottom + 16.0
        );
    }
    let mut decade = 10f64.powf(lo);
    while decade <= 10f64.powf(hi) {
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" x2=\"{0}\" y1=\"{1}\" y2=\"{1}\" stroke=\"#eee\"/><text x=\"{2}\" y=\"{3}\" text-anchor=\"end\">{decade:.0}</text>",
            w - right,
            y(decade),
            left - 6.0,
            y(decade) + 4.0
        );
        decade *= 10.0;
    }
    let _ = writeln!(
        out,
        "<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">connections (one call in flight each)</text>",
        (left + w - right) / 2.0,
        h - 12.0
    );
    for (i, (c, pts)) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = pts
            .iter()
            .map(|&(l, v)| format!("{:.1},{:.1}", x(l), y(v)))
            .collect();
        let width = if *c == Contender::Extpool { "3" } else { "1.5" };
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"{width}\" points=\"{}\"/>",
            path.join(" ")
        );
        let ly = top + 16.0 * i as f64;
        let _ = writeln!(
            out,
            "<rect x=\"{0}\" y=\"{1}\" width=\"14\" height=\"4\" fill=\"{colour}\"/><text x=\"{2}\" y=\"{3}\">{4}</text>",
            w - right + 10.0,
            ly,
            w - right + 30.0,
            ly + 5.0,
            c.name()
        );
    }
    out.push_str("</svg>\n");
    out
}
