//! Compiling an agent that sees 50 servers × 40 tools (2,000 tools): cold
//! (a new agent's first compile: rows built from the revision, schema costs,
//! the deferral plan) and warm (the same agent again, nothing changed: a
//! cache lookup and the instructions; target ≤ 1 ms), and the tool payload
//! the model gets with and without deferral (bytes, and tokens at 4 bytes
//! per token).
//!
//!     cargo bench -p extpool-agent --bench compile
//!
//! Knobs: `EXTPOOL_BENCH_SERVERS` (50), `EXTPOOL_BENCH_TOOLS` (40 per
//! server), `EXTPOOL_BENCH_COLD` (cold rounds, 30), `EXTPOOL_BENCH_WARM`
//! (warm compiles, 5,000). The servers are in-process capabilities (the
//! embedding program's own tools), so the figures are extpool's own cost.
//! Writes `agent-compile.json` to `$EXTPOOL_BENCH_OUT` when set.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use extpool_agent::{AgentFactory, AgentOptions, DeferralConfig, FunctionTools};
use extpool_host::{Host, HostOptions, Places, ServerSelection, ToolResult};
use serde_json::json;

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A tool schema of the size real MCP servers publish: five described
/// arguments, one an enum.
fn schema(tool: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Account or organization that owns the resource"},
            "name": {"type": "string", "description": format!("Name of the item tool {tool} works on")},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Most results to return"},
            "state": {"type": "string", "enum": ["open", "closed", "all"], "description": "Which items to include"},
            "cursor": {"type": "string", "description": "Where the previous page ended"},
        },
        "required": ["owner", "name"],
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    let servers = knob("EXTPOOL_BENCH_SERVERS", 50);
    let per_server = knob("EXTPOOL_BENCH_TOOLS", 40);
    let cold_rounds = knob("EXTPOOL_BENCH_COLD", 30).max(1);
    let warm_rounds = knob("EXTPOOL_BENCH_WARM", 5000).max(1);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("extpool.yaml"),
        "skills:\n  default_roots: false\n",
    )
    .unwrap();
    let options = HostOptions {
        places: Places {
            cwd: dir.path().to_path_buf(),
            home: Some(dir.path().join("home")),
            ..Places::default()
        },
        servers: ServerSelection::None,
        watch_skills: Some(false),
        ..HostOptions::files([dir.path().join("extpool.yaml")])
    };
    let host = Host::start(options).await.unwrap();
    for s in 0..servers {
        let mut tools = FunctionTools::new(&format!("server{s:02}")).unwrap();
        for t in 0..per_server {
            tools = tools.tool(
                &format!("operation_{t:02}"),
                &format!("Operation {t} of server {s}: lists, reads or changes the items it manages, with paging and filters."),
                schema(t),
                |_| async { ToolResult::text("ok") },
            );
        }
        host.register(tools.build()).await.unwrap();
    }
    let deferring = AgentFactory::new(host.clone());
    let everything = AgentFactory::with_options(
        host.clone(),
        AgentOptions {
            deferral: DeferralConfig::never(),
            ..AgentOptions::default()
        },
    );
    let session = host.session("bench").unwrap();

    // Cold: each round a new agent (an empty cache) compiles once.
    let mut cold = Vec::with_capacity(cold_rounds);
    for round in 0..cold_rounds {
        let agent = deferring
            .open_agent(&session, &format!("cold{round}"))
            .unwrap();
        let start = Instant::now();
        let compiled = agent.compile().await.unwrap();
        cold.push(start.elapsed());
        assert_eq!(compiled.deferred().count(), servers * per_server);
        agent.complete().await;
    }
    // Warm: one agent compiles again and again, nothing changed.
    let agent = deferring.open_agent(&session, "warm").unwrap();
    let deferred = agent.compile().await.unwrap();
    let mut warm = Vec::with_capacity(warm_rounds);
    for _ in 0..warm_rounds {
        let start = Instant::now();
        let compiled = agent.compile().await.unwrap();
        warm.push(start.elapsed());
        std::hint::black_box(compiled);
    }
    let full_agent = everything.open_agent(&session, "full").unwrap();
    let full = full_agent.compile().await.unwrap();
    cold.sort();
    warm.sort();
    let (with, without) = (deferred.tool_payload_bytes(), full.tool_payload_bytes());
    println!(
        "agent compile: {servers} servers × {per_server} tools ({} tools), deferral budget {} bytes",
        servers * per_server,
        DeferralConfig::default().budget_bytes
    );
    println!(
        "  cold (a new agent's first compile), {cold_rounds} rounds: median {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(percentile(&cold, 0.5)),
        ms(cold[0]),
        ms(cold[cold.len() - 1])
    );
    println!(
        "  warm (the same agent, nothing changed), {warm_rounds} compiles: median {:.1} µs, p99 {:.1} µs, max {:.1} µs (target ≤ 1 ms)",
        ms(percentile(&warm, 0.5)) * 1e3,
        ms(percentile(&warm, 0.99)) * 1e3,
        ms(warm[warm.len() - 1]) * 1e3
    );
    println!(
        "  tool payload the model gets: deferred {with} bytes (~{} tokens: {} tools + search tool, names and one-liners), not deferred {without} bytes (~{} tokens); {:.1}× smaller",
        with / 4,
        deferred.definitions().len() - 1,
        without / 4,
        without as f64 / with.max(1) as f64
    );
    if let Ok(out) = std::env::var("EXTPOOL_BENCH_OUT") {
        let report = json!({
            "servers": servers,
            "tools_per_server": per_server,
            "cold_ms": {"median": ms(percentile(&cold, 0.5)), "min": ms(cold[0]), "max": ms(cold[cold.len() - 1])},
            "warm_us": {"median": ms(percentile(&warm, 0.5)) * 1e3, "p99": ms(percentile(&warm, 0.99)) * 1e3},
            "payload_bytes": {"deferred": with, "not_deferred": without},
        });
        let path = std::path::Path::new(&out).join("agent-compile.json");
        std::fs::write(path, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
    }
    agent.complete().await;
    full_agent.complete().await;
    host.shutdown().await;
}
