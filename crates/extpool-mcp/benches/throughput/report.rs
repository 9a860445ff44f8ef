//! The Markdown report of the throughput samples: medians with their
//! min–max over rounds, ratios to each peer and the targets.

use std::fmt::Write;

use super::{INFLIGHT, Sample};

/// Median, min and max of `values` (not empty).
fn stats(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[0], values[n - 1])
}

fn pick<'a>(
    samples: &'a [Sample],
    server: &str,
    client: &str,
    mode: &str,
) -> impl Iterator<Item = &'a Sample> {
    samples
        .iter()
        .filter(move |s| s.server == server && s.client == client && s.mode == mode)
}

fn median_of(
    samples: &[Sample],
    server: &str,
    client: &str,
    mode: &str,
    f: fn(&Sample) -> f64,
) -> Option<f64> {
    let v: Vec<f64> = pick(samples, server, client, mode).map(f).collect();
    (!v.is_empty()).then(|| stats(v).0)
}

fn cps(s: &Sample) -> f64 {
    s.phase.calls_per_sec
}
fn cpu(s: &Sample) -> f64 {
    s.phase.cpu_us_per_call
}
fn p50(s: &Sample) -> f64 {
    s.phase.p50_us
}

/// The whole report.
pub(super) fn markdown(samples: &[Sample], machine: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "### Client and server cost (`tools/call echo` over stdio)\n"
    );
    let _ = writeln!(md, "{machine}. Medians over rounds, (min–max).\n");
    let _ = writeln!(
        md,
        "| server | client | mode | calls/s | p50 µs | p99 µs | client CPU µs/call |"
    );
    let _ = writeln!(md, "|---|---|---|---:|---:|---:|---:|");
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for s in samples.iter().filter(|s| s.mode != "sweep") {
        if !keys.contains(&(s.server, s.client, s.mode)) {
            keys.push((s.server, s.client, s.mode));
        }
    }
    for (server, client, mode) in keys {
        let col = |f: fn(&Sample) -> f64| {
            let (m, lo, hi) = stats(pick(samples, server, client, mode).map(f).collect());
            format!("{m:.0} ({lo:.0}–{hi:.0})")
        };
        let mode_label = if mode == "concurrent" {
            format!("{INFLIGHT} in flight")
        } else {
            mode.to_owned()
        };
        let _ = writeln!(
            md,
            "| {server} | {client} | {mode_label} | {} | {} | {} | {} |",
            col(cps),
            col(p50),
            col(|s| s.phase.p99_us),
            col(cpu),
        );
    }

    let sweep: Vec<&Sample> = samples.iter().filter(|s| s.mode == "sweep").collect();
    if !sweep.is_empty() {
        let mut levels: Vec<usize> = sweep.iter().map(|s| s.inflight).collect();
        levels.sort_unstable();
        levels.dedup();
        let mut clients: Vec<&str> = Vec::new();
        for s in &sweep {
            if !clients.contains(&s.client) {
                clients.push(s.client);
            }
        }
        let _ = writeln!(
            md,
            "\n### Throughput vs calls in flight (raw echo server), calls/s\n"
        );
        let _ = write!(md, "| client |");
        for l in &levels {
            let _ = write!(md, " {l} |");
        }
        let _ = write!(md, "\n|---|");
        for _ in &levels {
            let _ = write!(md, "---:|");
        }
        md.push('\n');
        for c in clients {
            let _ = write!(md, "| {c} |");
            for &l in &levels {
                let v: Vec<f64> = sweep
                    .iter()
                    .filter(|s| s.client == c && s.inflight == l)
                    .map(|s| cps(s))
                    .collect();
                if v.is_empty() {
                    let _ = write!(md, " – |");
                } else {
                    let _ = write!(md, " {:.0} |", stats(v).0);
                }
            }
            md.push('\n');
        }
    }

    let _ = writeln!(md, "\n### Targets\n");
    let _ = writeln!(md, "| target | measured | met |");
    let _ = writeln!(md, "|---|---:|---|");
    let mut target = |what: &str, value: Option<f64>, unit: &str, ok: fn(f64) -> bool| {
        let (shown, met) = match value {
            Some(v) => (
                format!("{v:.2}{unit}"),
                if ok(v) { "met" } else { "NOT met" },
            ),
            None => ("–".to_owned(), "not measured"),
        };
        let _ = writeln!(md, "| {what} | {shown} | {met} |");
    };
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    let m = |server, client, mode, f| median_of(samples, server, client, mode, f);
    let cap = "McpServerCap";
    target(
        "McpServerCap ÷ TypeScript calls/s, 64 in flight, raw echo ≥ 2×",
        ratio(
            m("raw-echo", cap, "concurrent", cps),
            m("raw-echo", "TypeScript SDK", "concurrent", cps),
        ),
        "×",
        |v| v >= 2.0,
    );
    target(
        "McpServerCap ÷ Python calls/s, 64 in flight, raw echo ≥ 10×",
        ratio(
            m("raw-echo", cap, "concurrent", cps),
            m("raw-echo", "Python SDK", "concurrent", cps),
        ),
        "×",
        |v| v >= 10.0,
    );
    target(
        "McpServerCap CPU per call ÷ TypeScript's, 64 in flight, raw echo ≤ 0.5",
        ratio(
            m("raw-echo", cap, "concurrent", cpu),
            m("raw-echo", "TypeScript SDK", "concurrent", cpu),
        ),
        "",
        |v| v <= 0.5,
    );
    target(
        "McpServerCap sequential p50 against raw echo ≤ 100 µs",
        m("raw-echo", cap, "sequential", p50),
        " µs",
        |v| v <= 100.0,
    );
    for client in [cap, "rmcp raw"] {
        target(
            &format!(
                "testkit server, extpool stdio ÷ rmcp stdio, calls/s at 64 in flight ({client} client) ≥ 3×"
            ),
            ratio(
                m("testkit", client, "concurrent", cps),
                m("testkit-rmcp-stdio", client, "concurrent", cps),
            ),
            "×",
            |v| v >= 3.0,
        );
    }
    md
}
