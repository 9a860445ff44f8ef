#!/usr/bin/env bash
# Installs the real MCP peers the tests and benchmarks talk to, into .peers/
# (ignored by git; or into $EXTPOOL_PEERS_DIR). Idempotent: does nothing when
# the pinned versions are there.
#   scripts/peers.sh           the peers of the tests (what CI installs)
#   scripts/peers.sh --bench   also the gateways the benchmarks compare with
#                              (never installed by the test command)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
peers="${EXTPOOL_PEERS_DIR:-$root/.peers}"
bench=false
[ "${1:-}" = "--bench" ] && bench=true
mkdir -p "$peers"

NPM_PACKAGES=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  # The MCP Apps example server (a tool with a ui:// resource), for the
  # gateway's MCP Apps pass-through test.
  "@modelcontextprotocol/server-basic-vanillajs@2.0.3"
  "@modelcontextprotocol/sdk@1.32.2"
  # The official conformance suite, and the Node >= 22 it needs.
  "@modelcontextprotocol/conformance@0.1.16"
  # Its draft release, the first with the 2026-07-28 era's server
  # scenarios (stateless requests, SEP-2243 headers), under its own name.
  "conformance-draft@npm:@modelcontextprotocol/conformance@0.2.0-alpha.12"
  "node@22.23.3"
  # A real OpenID provider (panva's), for the gateway's identity tests
  # (extpool-testkit's oidc module).
  "oidc-provider@9.13.3"
  # Real hosts that install plugins, for the tests in which their own CLIs
  # install a local plugin (`claude plugin marketplace add` + `claude
  # plugin install`, `gemini extensions install`) and extpool serves it.
  # Both run offline from a local folder; both need the Node >= 22 above.
  # Claude Code's binary is an optional dependency for each platform.
  "@anthropic-ai/claude-code@2.1.328"
  "@google/gemini-cli@0.61.0"
)
PIP_PACKAGES=(
  "mcp==2.3.0"
  "skills-ref==0.1.1"
  "pyyaml==6.0.3"
  # the JSON Schema validator that checks `extpool config schema` against
  # every example configuration (Draft 2020-12)
  "jsonschema==4.26.0"
)

stamp_npm="$peers/.npm-$(printf '%s\n' "${NPM_PACKAGES[@]}" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp_npm" ]; then
  echo "peers: installing npm packages into .peers/node_modules" >&2
  (cd "$peers" && [ -f package.json ] || echo '{"name":"extpool-peers","private":true}' > "$peers/package.json")
  npm install --prefix "$peers" --no-audit --no-fund --loglevel=error "${NPM_PACKAGES[@]}" >&2
  touch "$stamp_npm"
fi

stamp_pip="$peers/.pip-$(printf '%s\n' "${PIP_PACKAGES[@]}" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp_pip" ]; then
  echo "peers: installing Python packages into .peers/venv" >&2
  python3 -m venv "$peers/venv"
  "$peers/venv/bin/pip" install --quiet --disable-pip-version-check "${PIP_PACKAGES[@]}" >&2
  touch "$stamp_pip"
fi

# Installs Debian's PACKAGE with apt-get when running as root, refreshing
# the package lists once if the first try fails; otherwise says MISSING (what
# is missing and why) and stops. The one way this script installs from Debian.
debian_install() {
  local package=$1 missing=$2
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "peers: installing $package (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    (apt-get install -y -qq "$package" >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$package" >/dev/null; }) >&2
  else
    echo "peers: $missing" >&2
    exit 1
  fi
}

# tmux drives the terminal-display test of the command line.
if ! command -v tmux >/dev/null 2>&1; then
  debian_install tmux "tmux is missing; install it (the terminal-display test needs it)"
fi

# PostgreSQL server binaries (initdb, postgres) for the state store's tests,
# which start a private server of their own (Unix socket only). Debian
# installs them under /usr/lib/postgresql/<version>/bin, where the tests
# look (or set EXTPOOL_PG_BIN); running as root, the tests run the server
# as the package's `postgres` user.
pg_found() {
  { [ -n "${EXTPOOL_PG_BIN:-}" ] && [ -x "$EXTPOOL_PG_BIN/initdb" ]; } \
    || command -v initdb >/dev/null 2>&1 \
    || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}
if ! pg_found; then
  debian_install postgresql "PostgreSQL (initdb, postgres) is missing; install Debian's postgresql package or set EXTPOOL_PG_BIN"
fi

# nginx, whose own test (`nginx -t`) checks deploy/nginx.conf; installed
# without being started (policy-rc.d refuses service starts meanwhile).
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "peers: installing nginx-light (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    policy=/usr/sbin/policy-rc.d
    made_policy=false
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=true
    fi
    installed=true
    (apt-get install -y -qq nginx-light >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq nginx-light >/dev/null; }) >&2 || installed=false
    if $made_policy; then rm -f "$policy"; fi
    $installed || { echo "peers: cannot install nginx-light" >&2; exit 1; }
  else
    echo "peers: nginx is missing; install Debian's nginx-light (the deployment test runs nginx -t)" >&2
    exit 1
  fi
fi

# Chromium, the headless browser the operator page's tests drive over the
# DevTools protocol.
if ! command -v chromium >/dev/null 2>&1; then
  debian_install chromium "chromium is missing; install Debian's chromium (the operator page's tests drive it)"
fi

# Benchmark-only peers: the MCP gateways and proxies the gateway benchmark
# (`cargo bench -p extpool-server --bench gateway`) measures extpool serve
# against. Each in its own prefix or venv under .peers/bench/, since their
# pins conflict with the tests' (mcp-proxy needs the Python `mcp` < 2).
if $bench; then
  # wrk (Debian's), the second load generator of the gateway benchmark.
  if ! command -v wrk >/dev/null 2>&1; then
    debian_install wrk "wrk is missing; install Debian's wrk (the gateway benchmark drives every contender with it too), or run the benchmark with EXTPOOL_BENCH_WRK=0"
  fi
  BENCH_NPM_PACKAGES=(
    "supergateway@4.0.0"
    "mcp-proxy@6.7.19"
  )
  BENCH_PIP_VENVS=(
    "mcp-proxy=mcp-proxy==0.13.0"
    "fastmcp=fastmcp==4.2.3"
    "contextforge=mcp-contextforge-gateway==1.0.7.post20260921"
  )
  mkdir -p "$peers/bench/npm"
  stamp="$peers/bench/.npm-$(printf '%s\n' "${BENCH_NPM_PACKAGES[@]}" | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    echo "peers: installing benchmark npm packages into .peers/bench/npm" >&2
    [ -f "$peers/bench/npm/package.json" ] || echo '{"name":"extpool-bench-peers","private":true}' > "$peers/bench/npm/package.json"
    npm install --prefix "$peers/bench/npm" --no-audit --no-fund --loglevel=error "${BENCH_NPM_PACKAGES[@]}" >&2
    touch "$stamp"
  fi
  for entry in "${BENCH_PIP_VENVS[@]}"; do
    name="${entry%%=*}"
    spec="${entry#*=}"
    stamp="$peers/bench/.pip-$name-$(printf '%s' "$spec" | sha256sum | cut -c1-16)"
    if [ ! -f "$stamp" ]; then
      echo "peers: installing $spec into .peers/bench/$name-venv" >&2
      python3 -m venv "$peers/bench/$name-venv"
      "$peers/bench/$name-venv/bin/pip" install --quiet --disable-pip-version-check "$spec" >&2
      touch "$stamp"
    fi
  done
fi
