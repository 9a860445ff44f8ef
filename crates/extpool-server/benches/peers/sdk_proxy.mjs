// A minimal stdio → streamable HTTP proxy on the TypeScript MCP SDK
// (@modelcontextprotocol/sdk 1.x), written for the gateway benchmark: the
// low-level Server forwards tools/list and tools/call to one SDK Client of
// the stdio upstream; one stateful HTTP transport per session. Not a
// published package: the proxy a user would write in 30 lines.
// Usage: node sdk_proxy.mjs <sdk dir> <port> <command> [args...]
import http from "node:http";
import { randomUUID } from "node:crypto";
const [sdk, port, command, ...args] = process.argv.slice(2);
const m = (p) => import(`${sdk}/dist/esm/${p}`);
const { Client } = await m("client/index.js");
const { StdioClientTransport } = await m("client/stdio.js");
const { Server } = await m("server/index.js");
const { StreamableHTTPServerTransport } = await m("server/streamableHttp.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = await m("types.js");

const upstream = new Client({ name: "sdk-proxy", version: "1.0.0" });
await upstream.connect(new StdioClientTransport({ command, args, stderr: "ignore" }));
const sessions = new Map();
async function session() {
  const server = new Server({ name: "sdk-proxy", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (req) => upstream.listTools(req.params));
  server.setRequestHandler(CallToolRequestSchema, (req) => upstream.callTool(req.params));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  await server.connect(transport);
  return transport;
}
const listener = http.createServer(async (req, res) => {
  const id = req.headers["mcp-session-id"];
  const transport = (id && sessions.get(id)) || (await session());
  await transport.handleRequest(req, res);
});
listener.listen(Number(port), "127.0.0.1", () => {
  console.log(`LISTENING http://127.0.0.1:${listener.address().port}/mcp`);
});
