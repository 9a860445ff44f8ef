//! `extpool-bench-report DIR`: turns the benchmarks' samples in `DIR`
//! (written by `scripts/bench.sh`) into SVG charts and one Markdown report.
//!
//! - `latency.svg`: latency distribution (percentile curves) of each client
//!   against each server, sequential and at 64 in flight;
//! - `throughput.svg`: calls/s against calls in flight (1…256) on the raw
//!   echo server;
//! - `report.md`: the throughput table, then every other benchmark's
//!   output (`*.txt`) as it printed it.

mod charts;

use std::path::Path;

use anyhow::Context;

fn main() -> anyhow::Result<()> {
    let dir = std::env::args_os()
        .nth(1)
        .context("usage: extpool-bench-report DIR (the benchmarks' output directory)")?;
    let dir = Path::new(&dir);
    let samples = charts::load(&dir.join("throughput.json"))?;
    charts::latency(&samples, &dir.join("latency.svg"))?;
    charts::throughput(&samples, &dir.join("throughput.svg"))?;
    let report = report(dir)?;
    std::fs::write(dir.join("report.md"), &report)
        .with_context(|| format!("writing {}", dir.join("report.md").display()))?;
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, report.as_bytes())?;
    Ok(())
}

/// The Markdown report: the throughput tables, then the other benchmarks.
fn report(dir: &Path) -> anyhow::Result<String> {
    let mut md = std::fs::read_to_string(dir.join("throughput.md"))
        .with_context(|| format!("reading {}", dir.join("throughput.md").display()))?;
    md.push_str("\nCharts: `latency.svg`, `throughput.svg`.\n");
    let mut others: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    others.sort();
    for path in others {
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(&path)?;
        md.push_str(&format!(
            "\n### {name}\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
    }
    Ok(md)
}
