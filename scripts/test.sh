#!/usr/bin/env bash
# Runs the whole test suite: installs the MCP peers the tests need (npm and
# pip packages, into .peers/), then runs every Rust test of the workspace.
# --no-fail-fast: a failure never hides the results of other tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
start=$SECONDS
"$root/scripts/peers.sh"
echo "peers ready in $((SECONDS - start))s" >&2
export EXTPOOL_PEERS_DIR="$root/.peers"
cargo test --workspace --locked --no-fail-fast "$@"
