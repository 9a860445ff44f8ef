#!/usr/bin/env bash
# Runs the whole test suite: installs the MCP peers the tests need (npm and
# pip packages, into .peers/), then runs every Rust test of the workspace.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/peers.sh"
export EXTPOOL_PEERS_DIR="$root/.peers"
cargo test --workspace --locked --no-fail-fast "$@"
