//! Config loading benchmark: `extpool.yaml` with 40,000 servers, and a
//! one-line `.mcp.json` whose 4,000 names all become `x_` (each renamed),
//! loaded through `extpool_config::load` from real files.
//!
//! Run with `cargo bench -p extpool-config --bench load` (optimized).

// A benchmark's output is its result.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use extpool_config::{LoadRequest, Places, load};

const ROUNDS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn places(dir: &std::path::Path) -> Places {
    Places {
        cwd: dir.to_owned(),
        home: Some(dir.join("home")),
        ..Places::default()
    }
}

fn time(dir: &std::path::Path, expected: usize) -> Duration {
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let loaded = load(&LoadRequest {
            files: Vec::new(),
            places: places(dir),
        })
        .unwrap();
        rounds.push(started.elapsed());
        assert_eq!(loaded.config.mcp_servers.len(), expected);
    }
    median(rounds)
}

fn main() {
    let yaml_dir = tempfile::tempdir().unwrap();
    let mut yaml = String::from("mcp_servers:\n");
    for i in 0..40_000 {
        let _ = write!(yaml, "  s{i}:\n    command: echo\n    args: [\"{i}\"]\n");
    }
    std::fs::write(yaml_dir.path().join("extpool.yaml"), &yaml).unwrap();

    let json_dir = tempfile::tempdir().unwrap();
    let mut json = String::from("{\"mcpServers\":{");
    for i in 0..4000u32 {
        let c = char::from_u32(0x100 + i).unwrap();
        let sep = if i == 0 { "" } else { "," };
        let _ = write!(
            json,
            "{sep}\"x{c}\":{{\"command\":\"echo\",\"args\":[\"{i}\"]}}"
        );
    }
    json.push_str("}}");
    std::fs::write(json_dir.path().join(".mcp.json"), &json).unwrap();

    let y = time(yaml_dir.path(), 40_000);
    let j = time(json_dir.path(), 4000);
    println!(
        "extpool.yaml, 40,000 servers ({} KB): {:.1} ms (median of {ROUNDS})",
        yaml.len() / 1024,
        y.as_secs_f64() * 1e3
    );
    println!(
        ".mcp.json, 4,000 names renamed from x_ ({} KB, one line): {:.1} ms (median of {ROUNDS})",
        json.len() / 1024,
        j.as_secs_f64() * 1e3
    );
}
