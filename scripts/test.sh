#!/usr/bin/env bash
# Runs the whole test suite: installs the MCP peers the tests need (npm and
# pip packages, into .peers/), then runs every Rust test of the workspace.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/peers.sh"
export EXTPOOL_PEERS_DIR="$root/.peers"
cargo test --workspace --locked "$@"
# extpool-agent's rig adapter: rig-core turns on serde_json's preserve_order
# and more reqwest features, so it builds and is tested in a run of its own
# (the workspace's one feature set above stays without them).
cargo test --locked -p extpool-agent --features rig --test it rig
