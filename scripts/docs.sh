#!/usr/bin/env bash
# Builds the book (docs/, with mdBook) and checks every internal link of it
# and of README.md (scripts/check-links.py). mdBook is installed once from
# crates.io, pinned, into a cache outside the checkout that later runs
# reuse ($EXTPOOL_TOOLS_DIR, default ~/.cache/extpool/tools): about 2
# minutes of build on 2 cores the first time, nothing after.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

MDBOOK_VERSION=0.5.4
tools="${EXTPOOL_TOOLS_DIR:-${HOME}/.cache/extpool/tools}"
prefix="$tools/mdbook-$MDBOOK_VERSION"
mdbook="$prefix/bin/mdbook"

if ! "$mdbook" --version 2>/dev/null | grep -qx "mdbook v$MDBOOK_VERSION"; then
  echo "docs: installing mdbook $MDBOOK_VERSION into $prefix (cargo install)" >&2
  start=$SECONDS
  # No watch or serve (a local preview's file watcher and web server): the
  # build and its search index are what CI needs.
  cargo install mdbook --locked --version "$MDBOOK_VERSION" \
    --no-default-features --features search --root "$prefix" --quiet
  echo "docs: mdbook installed in $((SECONDS - start))s" >&2
fi

"$mdbook" build docs
python3 scripts/check-links.py
