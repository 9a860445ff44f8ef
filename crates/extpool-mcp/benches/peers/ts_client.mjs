// Throughput of the TypeScript MCP SDK client against a stdio server, for
// extpool-mcp's benchmark. Usage:
//   node ts_client.mjs <sdk-package-dir> <warmup> <sequential> <concurrent> <in-flight> <command> [args...]
// Prints one JSON line: {"sequential": {...}, "concurrent": {...}} with
// calls, seconds, calls_per_sec, p50_us, p99_us and cpu_us_per_call (this
// process's user + system CPU per call) for each phase.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, warmupS, seqS, concS, inflightS, command, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(join(sdkDir, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const client = new Client({ name: "extpool-bench-ts", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));

const call = () => client.callTool({ name: "echo", arguments: { message: "ping" } });
const now = () => process.hrtime.bigint();

function cpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function summary(latenciesNs, elapsedNs, cpu) {
  latenciesNs.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const q = (p) => Number(latenciesNs[Math.min(latenciesNs.length - 1, Math.floor(p * latenciesNs.length))]) / 1000;
  const seconds = Number(elapsedNs) / 1e9;
  return {
    calls: latenciesNs.length, seconds, calls_per_sec: latenciesNs.length / seconds,
    p50_us: q(0.5), p99_us: q(0.99), cpu_us_per_call: (cpu * 1e6) / latenciesNs.length,
  };
}

for (let i = 0; i < Number(warmupS); i++) await call();

const seqLat = [];
let c0 = cpuSeconds();
let t0 = now();
for (let i = 0; i < Number(seqS); i++) {
  const s = now();
  await call();
  seqLat.push(now() - s);
}
const sequential = summary(seqLat, now() - t0, cpuSeconds() - c0);

const total = Number(concS);
let next = 0;
const concLat = [];
async function worker() {
  while (next < total) {
    next++;
    const s = now();
    await call();
    concLat.push(now() - s);
  }
}
c0 = cpuSeconds();
t0 = now();
await Promise.all(Array.from({ length: Number(inflightS) }, worker));
const concurrent = summary(concLat, now() - t0, cpuSeconds() - c0);

console.log(JSON.stringify({ sequential, concurrent }));
await client.close();
