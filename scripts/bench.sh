#!/usr/bin/env bash
# The benchmark command (see BENCHMARKS.md). Installs the peers, then runs
# every benchmark in release mode, one after the other, on this machine:
#   - MCP client and server cost (extpool-mcp throughput: McpServerCap, raw
#     rmcp, the TypeScript and Python SDK clients; against the raw echo
#     server, the testkit server on extpool's stdio transport and on rmcp's;
#     contenders interleaved per round; calls/s vs calls in flight 1…256);
#   - the gateway (extpool serve) vs supergateway, mcp-proxy (npm and
#     PyPI), a TypeScript SDK proxy, FastMCP's proxy and ContextForge's
#     bridge, in front of the same stdio servers (testkit, raw echo), against
#     one rmcp HTTP hop and two fixed-body HTTP servers (nginx, hyper: the
#     load generator's ceiling), at 1 to 512 connections
#     (extpool-server, benches/gateway.rs);
#   - scale-out: session create and refresh latency on SQLite vs PostgreSQL,
#     calls/s through two gateway replicas vs one (benches/replicas.rs);
#   - the view policy: calls/s and p50 through the gateway with an upstream
#     of 10 tools and of 5,000 (the 5,000-tool figure at or above 0.9x the
#     10-tool one), and a session's table compiled after a grant change over
#     50 servers x 100 tools (benches/policy.rs);
#   - the streamable HTTP client: McpServerCap with and without connection
#     reuse, rmcp's default and pooled clients, against the testkit HTTP
#     server with TCP_NODELAY and with Nagle on (extpool-mcp http_client);
#   - skills discovery of 10,000 skills vs a Python walker, and hot reload
#     (a SKILL.md written -> the change event, 100 edits, at 100 and 10,000
#     skills) (extpool-skills);
#   - start-up of 20 stdio servers through the Host vs each alone
#     (extpool-host startup);
#   - registry and catalog figures (extpool-core, extpool-catalog);
#   - compiling an agent over 50 servers × 40 tools, cold and warm, and the
#     tool payload with and without deferral (extpool-agent).
# Writes everything to target/bench/ (or $EXTPOOL_BENCH_OUT): every sample
# as JSON, each benchmark's output, the SVG charts and report.md, which it
# also prints. Benchmarks never run in CI's tests; CI only builds them.
# Knobs: see the header of each benchmark (EXTPOOL_BENCH_ROUNDS, ...).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export EXTPOOL_PEERS_DIR="${EXTPOOL_PEERS_DIR:-$root/.peers}"
"$root/scripts/peers.sh" --bench
out="${EXTPOOL_BENCH_OUT:-$root/target/bench}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export EXTPOOL_BENCH_OUT="$out"
rm -f "$out"/*.txt

cargo bench --locked -p extpool-mcp --bench throughput
cargo bench --locked -p extpool-mcp --bench http_client | tee "$out/http-client.txt"
cargo bench --locked -p extpool-server --bench gateway | tee "$out/gateway.txt"
cargo bench --locked -p extpool-server --bench replicas | tee "$out/replicas.txt"
cargo bench --locked -p extpool-server --bench policy | tee "$out/policy.txt"
cargo bench --locked -p extpool-skills --bench discovery | tee "$out/skills-discovery.txt"
cargo bench --locked -p extpool-skills --bench hot_reload | tee "$out/skills-hot-reload.txt"
cargo bench --locked -p extpool-host --bench startup | tee "$out/startup.txt"
cargo bench --locked -p extpool-core --bench registry | tee "$out/registry.txt"
cargo bench --locked -p extpool-catalog --bench catalog | tee "$out/catalog.txt"
cargo bench --locked -p extpool-agent --bench compile | tee "$out/agent-compile.txt"
{
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo) RAM, $(uname -srm)"
  echo "cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "rustc: $(rustc --version)"
  echo "node: $(node --version 2>/dev/null || echo missing); python: $("$EXTPOOL_PEERS_DIR/venv/bin/python" --version 2>&1)"
} > "$out/machine.txt"
cargo run --locked --release -q -p extpool-bench --bin extpool-bench-report -- "$out"
echo "bench: report, samples and charts in $out" >&2
