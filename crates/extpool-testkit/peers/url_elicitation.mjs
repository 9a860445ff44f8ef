// Several real MCP clients (the TypeScript SDK), each its own session of
// one server, that run a list of steps and print one JSON object per step
// on stdout: for URL-mode elicitation, where what one session does must
// reach that session only.
//
//   node url_elicitation.mjs (--url URL | --stdio CMD ARG...) STEPS_JSON
//
// (with --stdio, each client starts a server process of its own).
// Steps (each names its client with "as"):
//   {"op": "connect", "as": "a", "elicitation": {...}}  the client's
//       elicitation capability, as declared at initialize
//   {"op": "list_tools", "as": "a"}
//   {"op": "call", "as": "a", "name": N, "args": {...}}  prints the text,
//       or the JSON-RPC error (code, message, data.elicitations)
//   {"op": "asked", "as": "a"}  the elicitation requests the client got
//       (each accepted; a form with content {"answer": "yes"})
//   {"op": "wait_complete", "as": "a", "id": ID}  waits (60 s at most)
//       for notifications/elicitation/complete of ID
//   {"op": "completes", "as": "a"}  the ids of every complete notification
//       the client got, in order
// The SDK is imported from EXTPOOL_NODE_MODULES.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const nm = process.env.EXTPOOL_NODE_MODULES;
if (!nm) {
  console.error("set EXTPOOL_NODE_MODULES to the node_modules holding @modelcontextprotocol/sdk");
  process.exit(2);
}
const sdk = (rel) => import(pathToFileURL(join(nm, "@modelcontextprotocol/sdk/dist/esm", rel)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { ElicitRequestSchema, ElicitationCompleteNotificationSchema } = await sdk("types.js");

const args = process.argv.slice(2);
if ((args[0] !== "--url" || args.length !== 3) && (args[0] !== "--stdio" || args.length < 3)) {
  console.error("usage: url_elicitation.mjs (--url URL | --stdio CMD ARG...) STEPS_JSON");
  process.exit(2);
}
const transport = () =>
  args[0] === "--url"
    ? new StreamableHTTPClientTransport(new URL(args[1]))
    : new StdioClientTransport({ command: args[1], args: args.slice(2, -1) });
const steps = JSON.parse(args[args.length - 1]);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const clients = new Map();

async function connect(name, elicitation) {
  const client = new Client(
    { name: `extpool-test-url-${name}`, version: "1.0.0" },
    { capabilities: { elicitation } },
  );
  const state = { client, asked: [], completes: [], wake: null };
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const p = request.params;
    state.asked.push({ mode: p.mode ?? "form", url: p.url, elicitationId: p.elicitationId, message: p.message });
    return p.mode === "url" ? { action: "accept" } : { action: "accept", content: { answer: "yes" } };
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, async (n) => {
    state.completes.push(n.params.elicitationId);
    if (state.wake) state.wake();
  });
  await client.connect(transport());
  clients.set(name, state);
}

async function waitComplete(state, id) {
  const deadline = Date.now() + 60000;
  while (!state.completes.includes(id)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`no notifications/elicitation/complete of ${id} within 60 s`);
    await new Promise((resolve) => {
      state.wake = resolve;
      setTimeout(resolve, left).unref();
    });
  }
}

for (const step of steps) {
  if (step.op === "connect") {
    await connect(step.as, step.elicitation);
    emit({ op: step.op, as: step.as });
    continue;
  }
  const state = clients.get(step.as);
  if (!state) throw new Error(`no client ${step.as}`);
  switch (step.op) {
    case "list_tools": {
      const r = await state.client.listTools();
      emit({ op: step.op, as: step.as, tools: r.tools.map((t) => t.name) });
      break;
    }
    case "call": {
      try {
        const r = await state.client.callTool({ name: step.name, arguments: step.args ?? {} });
        const text = r.content.filter((c) => c.type === "text").map((c) => c.text);
        emit({ op: step.op, as: step.as, is_error: !!r.isError, text });
      } catch (e) {
        if (e.code === undefined) throw e;
        const elicitations = e.data?.elicitations ?? null;
        emit({ op: step.op, as: step.as, error: { code: e.code, message: e.message, elicitations } });
      }
      break;
    }
    case "asked":
      emit({ op: step.op, as: step.as, asked: state.asked });
      break;
    case "wait_complete":
      await waitComplete(state, step.id);
      emit({ op: step.op, as: step.as });
      break;
    case "completes":
      emit({ op: step.op, as: step.as, completes: state.completes });
      break;
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}
for (const { client } of clients.values()) await client.close();
