//! The two charts, drawn with plotters' SVG backend.

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;
use serde::Deserialize;

/// One measured phase, as `benches/throughput.rs` writes it.
#[derive(Debug, Clone, Deserialize)]
pub struct Sample {
    /// `raw-echo`, `testkit` or `testkit-rmcp-stdio`.
    pub server: String,
    /// The client's name.
    pub client: String,
    /// `sequential`, `concurrent` or `sweep`.
    pub mode: String,
    /// Calls in flight.
    pub inflight: usize,
    /// Calls per second.
    pub calls_per_sec: f64,
    /// Latency at 0, 1, …, 100 % (Rust clients only).
    #[serde(default)]
    pub percentiles_us: Vec<f64>,
}

#[derive(Deserialize)]
struct File {
    samples: Vec<Sample>,
}

/// Reads `throughput.json`.
pub fn load(path: &Path) -> anyhow::Result<Vec<Sample>> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let file: File =
        serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(file.samples)
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e}")
}

/// The median of each percentile over rounds.
fn median_curve(samples: &[&Sample]) -> Vec<f64> {
    let len = samples
        .iter()
        .map(|s| s.percentiles_us.len())
        .min()
        .unwrap_or(0);
    (0..len)
        .map(|i| {
            let mut v: Vec<f64> = samples.iter().map(|s| s.percentiles_us[i]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect()
}

/// Latency percentile curves (x: percentile, y: µs, log scale), one panel
/// for sequential calls and one for 64 in flight.
pub fn latency(samples: &[Sample], path: &Path) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (1100, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(error)?;
    let panels = root.split_evenly((1, 2));
    for (panel, mode) in panels.iter().zip(["sequential", "concurrent"]) {
        let mut series: Vec<(String, Vec<f64>)> = Vec::new();
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for s in samples
            .iter()
            .filter(|s| s.mode == mode && !s.percentiles_us.is_empty())
        {
            if !keys.contains(&(s.server.as_str(), s.client.as_str())) {
                keys.push((&s.server, &s.client));
            }
        }
        for (server, client) in keys {
            let runs: Vec<&Sample> = samples
                .iter()
                .filter(|s| s.mode == mode && s.server == server && s.client == client)
                .collect();
            series.push((format!("{client} / {server}"), median_curve(&runs)));
        }
        let top = series
            .iter()
            .flat_map(|(_, c)| c.iter().copied())
            .fold(10.0_f64, f64::max);
        let low = series
            .iter()
            .flat_map(|(_, c)| c.iter().copied())
            .fold(top, f64::min)
            .max(1.0);
        let title = if mode == "sequential" {
            "latency, sequential calls".to_owned()
        } else {
            "latency, 64 calls in flight".to_owned()
        };
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..100.0, (low * 0.8..top * 1.2).log_scale())
            .map_err(error)?;
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc("µs")
            .draw()
            .map_err(error)?;
        for (i, (name, curve)) in series.into_iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    curve.into_iter().enumerate().map(|(p, v)| (p as f64, v)),
                    color.stroke_width(2),
                ))
                .map_err(error)?
                .label(name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(error)?;
    }
    root.present().map_err(error)?;
    Ok(())
}

/// Calls/s against calls in flight (log x), medians over rounds.
pub fn throughput(samples: &[Sample], path: &Path) -> anyhow::Result<()> {
    let sweep: Vec<&Sample> = samples.iter().filter(|s| s.mode == "sweep").collect();
    let mut clients: Vec<&str> = Vec::new();
    for s in &sweep {
        if !clients.contains(&s.client.as_str()) {
            clients.push(&s.client);
        }
    }
    let mut levels: Vec<usize> = sweep.iter().map(|s| s.inflight).collect();
    levels.sort_unstable();
    levels.dedup();
    let top = sweep.iter().map(|s| s.calls_per_sec).fold(1000.0, f64::max);
    let max_level = levels.last().copied().unwrap_or(256).max(2) as f64;

    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(error)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "throughput vs calls in flight (raw echo server)",
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d((1.0..max_level).log_scale(), 0.0..top * 1.1)
        .map_err(error)?;
    chart
        .configure_mesh()
        .x_desc("calls in flight")
        .y_desc("calls/s")
        .draw()
        .map_err(error)?;
    for (i, client) in clients.into_iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<(f64, f64)> = levels
            .iter()
            .filter_map(|&l| {
                let mut v: Vec<f64> = sweep
                    .iter()
                    .filter(|s| s.client == client && s.inflight == l)
                    .map(|s| s.calls_per_sec)
                    .collect();
                v.sort_by(f64::total_cmp);
                v.get(v.len() / 2).map(|m| (l as f64, *m))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(error)?
            .label(client)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(error)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(error)?;
    root.present().map_err(error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(client: &str, mode: &str, inflight: usize, cps: f64) -> Sample {
        Sample {
            server: "raw-echo".into(),
            client: client.into(),
            mode: mode.into(),
            inflight,
            calls_per_sec: cps,
            percentiles_us: (0..=100).map(|p| 50.0 + f64::from(p)).collect(),
        }
    }

    #[test]
    fn charts_name_every_series() {
        let dir = tempfile::tempdir().unwrap();
        let samples = vec![
            sample("McpServerCap", "sequential", 1, 9000.0),
            sample("McpServerCap", "concurrent", 64, 40000.0),
            sample("TypeScript SDK", "concurrent", 64, 15000.0),
            sample("McpServerCap", "sweep", 1, 9000.0),
            sample("McpServerCap", "sweep", 64, 40000.0),
            sample("TypeScript SDK", "sweep", 64, 15000.0),
        ];
        latency(&samples, &dir.path().join("l.svg")).unwrap();
        throughput(&samples, &dir.path().join("t.svg")).unwrap();
        let l = std::fs::read_to_string(dir.path().join("l.svg")).unwrap();
        let t = std::fs::read_to_string(dir.path().join("t.svg")).unwrap();
        assert!(l.starts_with("<svg"), "{l}");
        assert!(l.contains("McpServerCap / raw-echo"));
        assert!(l.contains("TypeScript SDK / raw-echo"));
        assert!(t.contains("TypeScript SDK") && t.contains("calls in flight"));
    }
}
