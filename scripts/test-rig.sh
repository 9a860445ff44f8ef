#!/usr/bin/env bash
# extpool-agent's rig adapter (feature `rig`, Rust >= 1.95): rig-core turns on
# serde_json's preserve_order and more reqwest features, so it is linted,
# built and tested in a run of its own, outside the default test command
# (building that second feature set of the tree would double CI's time).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo clippy -p extpool-agent --all-targets --features rig --locked -- -D warnings
cargo test --locked -p extpool-agent --features rig --test it rig
