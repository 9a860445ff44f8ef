// A real MCP client (the TypeScript SDK) that runs a list of steps against
// a server and prints one JSON object per step on stdout — the twin of
// mcp_client.py, with the same steps:
//
//   node mcp_client.mjs (--url URL | --stdio CMD ARG...) STEPS_JSON
//
// With `"whole": true`, `list_tools` and `list_resources` also print every
// definition as the SDK received it (`definitions`: `_meta`, icons,
// schemas…) and `read` every content item (`contents`: uri, mimeType,
// `_meta`, text or blob).
//
// Sampling requests are answered with "sampled by the typescript client";
// elicitation requests are accepted with content {"answer": "yes"}.
// The SDK is imported from EXTPOOL_NODE_MODULES (the peers' node_modules),
// since this script does not live beside it.
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
const { CreateMessageRequestSchema, ElicitRequestSchema, ToolListChangedNotificationSchema } =
  await sdk("types.js");

const args = process.argv.slice(2);
const steps = JSON.parse(args[args.length - 1]);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const client = new Client(
  { name: "extpool-test-ts-client", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {} } },
);
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: "assistant",
  content: { type: "text", text: "sampled by the typescript client" },
  model: "test-model",
}));
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: "accept",
  content: { answer: "yes" },
}));
let changed = 0;
let wake = null;
client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
  changed += 1;
  if (wake) wake();
});

let transport;
if (args[0] === "--url") {
  transport = new StreamableHTTPClientTransport(new URL(args[1]));
} else if (args[0] === "--stdio") {
  transport = new StdioClientTransport({ command: args[1], args: args.slice(2, -1) });
} else {
  console.error("usage: mcp_client.mjs (--url URL | --stdio CMD ARG...) STEPS_JSON");
  process.exit(2);
}
await client.connect(transport);
emit({ op: "initialize", server: client.getServerVersion()?.name });
for (const step of steps) {
  switch (step.op) {
    case "list_tools": {
      const r = await client.listTools();
      const whole = step.whole ? { definitions: r.tools } : {};
      emit({ op: step.op, tools: r.tools.map((t) => t.name), ...whole });
      break;
    }
    case "call": {
      const progress = [];
      let r;
      try {
        r = await client.callTool(
          { name: step.name, arguments: step.args ?? {} },
          undefined,
          step.progress ? { onprogress: (p) => progress.push(p.progress) } : undefined,
        );
      } catch (e) {
        if (!step.expect_error) throw e;
        emit({ op: step.op, error: String(e.message ?? e), code: e.code ?? null, data: e.data ?? null });
        break;
      }
      const text = r.content.filter((c) => c.type === "text").map((c) => c.text);
      emit({ op: step.op, is_error: !!r.isError, text, progress });
      break;
    }
    case "list_prompts": {
      const r = await client.listPrompts();
      emit({ op: step.op, prompts: r.prompts.map((p) => p.name) });
      break;
    }
    case "get_prompt": {
      const r = await client.getPrompt({ name: step.name, arguments: step.args ?? {} });
      emit({ op: step.op, text: r.messages.map((m) => m.content.text) });
      break;
    }
    case "list_resources": {
      const r = await client.listResources();
      const whole = step.whole ? { definitions: r.resources } : {};
      emit({ op: step.op, resources: r.resources.map((x) => x.uri), ...whole });
      break;
    }
    case "read": {
      const r = await client.readResource({ uri: step.uri });
      const whole = step.whole ? { contents: r.contents } : {};
      emit({ op: step.op, text: r.contents.map((c) => c.text ?? null), ...whole });
      break;
    }
    case "wait_tools_changed": {
      if (changed === 0) {
        await new Promise((resolve, reject) => {
          wake = resolve;
          setTimeout(() => reject(new Error("no tools/list_changed within 60 s")), 60000).unref();
        });
      }
      changed = 0;
      emit({ op: step.op });
      break;
    }
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}
await client.close();
