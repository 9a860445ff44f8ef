"""Throughput of the Python `mcp` SDK client against a stdio server, for
extpool-mcp's benchmark. Usage:

    python py_client.py <warmup> <sequential> <concurrent> <in-flight> <command> [args...]

Prints one JSON line: {"sequential": {...}, "concurrent": {...}} with calls,
seconds, calls_per_sec, p50_us, p99_us and cpu_us_per_call (this process's
user + system CPU per call) for each phase.
"""

import asyncio
import json
import sys
import time

from mcp import Client, StdioServerParameters


def summary(latencies_ns, elapsed_ns, cpu_ns):
    latencies_ns.sort()
    n = len(latencies_ns)

    def q(p):
        return latencies_ns[min(n - 1, int(p * n))] / 1000

    seconds = elapsed_ns / 1e9
    return {
        "calls": n,
        "seconds": seconds,
        "calls_per_sec": n / seconds,
        "p50_us": q(0.5),
        "p99_us": q(0.99),
        "cpu_us_per_call": cpu_ns / 1000 / n,
    }


async def main():
    warmup, sequential, concurrent, in_flight = (int(x) for x in sys.argv[1:5])
    command, args = sys.argv[5], sys.argv[6:]
    params = StdioServerParameters(command=command, args=args)
    async with Client(params) as client:

        async def call():
            await client.call_tool("echo", {"message": "ping"})

        for _ in range(warmup):
            await call()

        lat = []
        c0 = time.process_time_ns()
        t0 = time.perf_counter_ns()
        for _ in range(sequential):
            s = time.perf_counter_ns()
            await call()
            lat.append(time.perf_counter_ns() - s)
        seq = summary(lat, time.perf_counter_ns() - t0, time.process_time_ns() - c0)

        lat = []
        remaining = [concurrent]

        async def worker():
            while remaining[0] > 0:
                remaining[0] -= 1
                s = time.perf_counter_ns()
                await call()
                lat.append(time.perf_counter_ns() - s)

        c0 = time.process_time_ns()
        t0 = time.perf_counter_ns()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        conc = summary(lat, time.perf_counter_ns() - t0, time.process_time_ns() - c0)

    print(json.dumps({"sequential": seq, "concurrent": conc}), flush=True)


asyncio.run(main())
