#!/usr/bin/env python3
"""Counts what one `tools/call` costs the gateway: instructions, bulk copies
(memcpy) and allocations a call, under callgrind, in the gateway process
alone. The gateway is the one the gateway benchmark runs (its binary's
gateway child, `Gateway::serve_http` as `extpool serve` runs it) in front of
`extpool-raw-echo`; calls go one at a time on one keep-alive connection, the
first WARM of them before the counters are zeroed. Counts are deterministic,
so two builds compare without a quiet machine.

    cargo bench -p extpool-server --bench gateway --no-run
    scripts/profile-call.py [--era session|2026-07-28] [--calls 200] [--bin PATH]

Needs valgrind (Debian's `valgrind` package). --bin names a gateway
benchmark binary (default: the newest target/release/deps/gateway-*).
"""
import argparse
import glob
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOCATORS = ("_rjem_malloc", "_rjem_mallocx", "_rjem_calloc", "_rjem_realloc",
              "_rjem_rallocx", "malloc", "calloc", "realloc")
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "extpool-profile", "version": "1"}}


def newest(pattern):
    found = [p for p in glob.glob(pattern) if os.access(p, os.X_OK) and not p.endswith(".d")]
    if not found:
        sys.exit(f"profile-call: nothing at {pattern}: build it first "
                 "(cargo bench -p extpool-server --bench gateway --no-run)")
    return max(found, key=os.path.getmtime)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, proc, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"profile-call: the gateway exited with {proc.returncode} before it listened")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"profile-call: the gateway did not listen on {port} within {seconds} s")


class Client:
    def __init__(self, port, stateless):
        self.port, self.stateless, self.session = port, stateless, None
        self.conn = http.client.HTTPConnection("127.0.0.1", port)

    def post(self, body, method, tool=None):
        headers = {"Host": f"127.0.0.1:{self.port}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self.stateless:
            headers.update({"mcp-protocol-version": "2026-07-28", "mcp-method": method})
            if tool:
                headers["mcp-name"] = tool
        else:
            headers["mcp-protocol-version"] = "2025-11-25"
        if self.session:
            headers["mcp-session-id"] = self.session
        self.conn.request("POST", "/mcp", json.dumps(body), headers)
        response = self.conn.getresponse()
        return response, response.read()

    def open(self):
        if self.stateless:
            return
        response, data = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "extpool-profile", "version": "1"}}}, "initialize")
        self.session = response.getheader("mcp-session-id")
        if not self.session:
            sys.exit(f"profile-call: initialize gave no session: {data[:300]!r}")
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                  "notifications/initialized")

    def call(self, tool, i):
        params = {"name": tool, "arguments": {"message": "ping"}}
        if self.stateless:
            params["_meta"] = META
        response, data = self.post({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                                    "params": params}, "tools/call", tool)
        if response.status != 200 or b'"result"' not in data or b'"isError":true' in data:
            sys.exit(f"profile-call: call {i} was not answered with a result: "
                     f"{response.status} {data[:300]!r}")


def read_profile(path):
    """Self instructions per function and call counts into functions."""
    names, own, calls = {}, {}, {}
    fn = cfn = None
    after_calls = False
    for line in open(path, errors="replace"):
        head = line[:1]
        if head.isdigit() or head in "+-*":
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                if after_calls:
                    after_calls = False
                else:
                    own[fn] = own.get(fn, 0) + int(parts[1])
            continue
        if line.startswith(("fn=", "cfn=")):
            key, _, rest = line.partition("=")
            m = re.match(r"\((\d+)\)(?: (.*))?", rest.strip())
            if m:
                if m.group(2):
                    names[m.group(1)] = m.group(2).strip()
                if key == "fn":
                    fn = names.get(m.group(1))
                else:
                    cfn = names.get(m.group(1))
        elif line.startswith("calls="):
            after_calls = True
            calls[cfn] = calls.get(cfn, 0) + int(line[6:].split()[0])
    return own, calls


def main():
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--era", choices=["session", "2026-07-28"], default="session")
    args.add_argument("--calls", type=int, default=200)
    args.add_argument("--warm", type=int, default=20)
    args.add_argument("--bin", help="a gateway benchmark binary")
    args.add_argument("--top", type=int, default=0, help="also print the N costliest functions")
    opts = args.parse_args()
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        sys.exit("profile-call: valgrind missing (Debian's `valgrind` package)")
    binary = opts.bin or newest(os.path.join(ROOT, "target/release/deps/gateway-*"))
    echo = newest(os.path.join(ROOT, "target/release/extpool-raw-echo"))
    with tempfile.TemporaryDirectory(prefix="extpool-profile-") as dir:
        os.makedirs(os.path.join(dir, "home"))
        config = os.path.join(dir, "extpool-raw-echo.yaml")
        with open(config, "w") as f:
            f.write(f"mcp_servers:\n  bench:\n    command: {json.dumps(echo)}\n    args: []\n"
                    "skills:\n  paths: [./skills]\n  default_roots: false\n  watch: false\n")
        out = os.path.join(dir, "callgrind.out")
        port = free_port()
        env = dict(os.environ, EXTPOOL_BENCH_GATEWAY_CONFIG=config,
                   EXTPOOL_BENCH_GATEWAY_PORT=str(port), EXTPOOL_BENCH_UPSTREAM="raw-echo")
        proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                 "--dump-instr=no", binary], env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(port, proc)
            client = Client(port, opts.era != "session")
            client.open()
            tool = "mcp__bench__echo"
            for i in range(opts.warm):
                client.call(tool, i)
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for i in range(opts.calls):
                client.call(tool, opts.warm + i)
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            os.killpg(proc.pid, 15)
            proc.wait()
        dumps = sorted(glob.glob(out + ".*"))
        if not dumps:
            sys.exit("profile-call: callgrind wrote no dump")
        own, calls = read_profile(dumps[0])
    n = opts.calls
    total = sum(own.values())
    copies = sum(v for f, v in own.items() if f and "memcpy" in f)
    allocs = sum(v for f, v in calls.items() if f in ALLOCATORS)
    print(f"{opts.era} tools/call through the gateway ({os.path.basename(binary)}), {n} calls: "
          f"{total / n:,.0f} instructions a call ({copies / n:,.0f} in memcpy), "
          f"{allocs / n:.1f} allocations a call")
    for f, v in sorted(own.items(), key=lambda x: -x[1])[:opts.top]:
        print(f"{v / n:10,.0f}  {(f or '?')[:150]}")


if __name__ == "__main__":
    main()
