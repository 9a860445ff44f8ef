// Several real MCP clients (the TypeScript SDK), each its own session of
// one server, that run a list of steps about tasks (MCP 2025-11-25) and
// print one JSON object per step on stdout.
//
//   node tasks.mjs --url URL STEPS_JSON
//   node tasks.mjs --stdio '["COMMAND", "ARG", ...]' STEPS_JSON
//       (each client starts COMMAND as its stdio server)
//
// Steps (each names its client with "as"):
//   {"op": "connect", "as": "a", "token": T?}  prints the server's `tasks`
//       capability (with token: sent as the bearer token of every request)
//   {"op": "start", "as": "a", "name": N, "args": {...}, "ttl": MS}
//       a task-augmented tools/call; prints the task it created
//   {"op": "tools", "as": "a"}  tools/list: [name, execution.taskSupport]
//       of each tool that has one
//   {"op": "stream", "as": "a", "name": N, "args": {...}}  callToolStream
//       without a task option (the SDK makes a task of a tool listed as
//       one): the types of the messages it yields, and the result's text
//   {"op": "get", "as": "a", "task": ID}  tasks/get: the task, or the error
//   {"op": "wait", "as": "a", "task": ID}  polls tasks/get (60 s at most)
//       until the task is terminal; prints it
//   {"op": "result", "as": "a", "task": ID}  tasks/result: the text, or the error
//   {"op": "list", "as": "a"}  tasks/list: the ids and statuses
//   {"op": "cancel", "as": "a", "task": ID}  tasks/cancel: the task, or the error
//   {"op": "statuses", "as": "a", "until": [ID, STATUS]?}  the
//       notifications/tasks/status the client got: [taskId, status] each,
//       in order (with until: once that one came, waiting 60 s at most)
//   {"op": "close", "as": "a"}  ends the client's session
// An ID "$name" is the id a start step with "save": "name" printed.
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
const { CallToolResultSchema, TaskStatusNotificationSchema } = await sdk("types.js");

const args = process.argv.slice(2);
if (!["--url", "--stdio"].includes(args[0]) || args.length !== 3) {
  console.error("usage: tasks.mjs --url URL STEPS_JSON | --stdio COMMAND_JSON STEPS_JSON");
  process.exit(2);
}
const url = args[0] === "--url" ? new URL(args[1]) : null;
const command = args[0] === "--stdio" ? JSON.parse(args[1]) : null;
const steps = JSON.parse(args[2]);
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const clients = new Map();
const saved = new Map();
const idOf = (step) => (step.task?.startsWith("$") ? saved.get(step.task.slice(1)) : step.task);
const failure = (e) => ({ error: { code: e.code ?? null, message: String(e.message ?? e) } });
const terminal = (s) => ["completed", "failed", "cancelled"].includes(s);

async function connect(name, token) {
  const client = new Client({ name: `extpool-test-tasks-${name}`, version: "1.0.0" }, { capabilities: {} });
  const state = { client, statuses: [] };
  client.setNotificationHandler(TaskStatusNotificationSchema, async (n) => {
    state.statuses.push([n.params.taskId, n.params.status]);
  });
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  const transport = url
    ? new StreamableHTTPClientTransport(url, { requestInit })
    : new StdioClientTransport({ command: command[0], args: command.slice(1), env: process.env, stderr: "inherit" });
  await client.connect(transport);
  state.transport = transport;
  clients.set(name, state);
  return client.getServerCapabilities()?.tasks ?? null;
}

async function run(step, state) {
  const tasks = state.client.experimental.tasks;
  switch (step.op) {
    case "start": {
      const stream = tasks.callToolStream(
        { name: step.name, arguments: step.args ?? {} },
        CallToolResultSchema,
        { task: { ttl: step.ttl ?? 60000 } },
      );
      // The first message is the created task; the stream is left there
      // (the steps poll, fetch and cancel by themselves).
      const first = await stream.next();
      const message = first.value;
      if (message?.type !== "taskCreated") {
        return { op: step.op, as: step.as, error: message?.error ? failure(message.error).error : message };
      }
      if (step.save) saved.set(step.save, message.task.taskId);
      return { op: step.op, as: step.as, task: message.task };
    }
    case "tools": {
      const listed = await state.client.listTools();
      const tools = listed.tools.filter((t) => t.execution?.taskSupport).map((t) => [t.name, t.execution.taskSupport]);
      return { op: step.op, as: step.as, tools };
    }
    case "stream": {
      const types = [];
      let text = null;
      for await (const message of tasks.callToolStream({ name: step.name, arguments: step.args ?? {} })) {
        types.push(message.type);
        if (message.type === "result") text = message.result.content?.map((c) => c.text ?? "").join("");
        if (message.type === "error") text = String(message.error?.message ?? message.error);
      }
      return { op: step.op, as: step.as, types: [...new Set(types)], text };
    }
    case "get":
      try {
        return { op: step.op, as: step.as, task: await tasks.getTask(idOf(step)) };
      } catch (e) {
        return { op: step.op, as: step.as, ...failure(e) };
      }
    case "wait": {
      const deadline = Date.now() + 60000;
      for (;;) {
        const task = await tasks.getTask(idOf(step));
        if (terminal(task.status)) return { op: step.op, as: step.as, task };
        if (Date.now() > deadline) throw new Error(`task ${idOf(step)} not done within 60 s: ${task.status}`);
        await new Promise((r) => setTimeout(r, Math.min(task.pollInterval ?? 200, 200)));
      }
    }
    case "result":
      try {
        const result = await tasks.getTaskResult(idOf(step), CallToolResultSchema);
        return {
          op: step.op,
          as: step.as,
          text: result.content?.map((c) => c.text ?? "").join(""),
          related: result._meta?.["io.modelcontextprotocol/related-task"]?.taskId ?? null,
        };
      } catch (e) {
        return { op: step.op, as: step.as, ...failure(e) };
      }
    case "list": {
      const listed = await tasks.listTasks();
      return { op: step.op, as: step.as, tasks: listed.tasks.map((t) => [t.taskId, t.status]) };
    }
    case "cancel":
      try {
        return { op: step.op, as: step.as, task: await tasks.cancelTask(idOf(step)) };
      } catch (e) {
        return { op: step.op, as: step.as, ...failure(e) };
      }
    case "statuses": {
      if (step.until) {
        const id = idOf({ task: step.until[0] });
        const deadline = Date.now() + 60000;
        while (!state.statuses.some(([t, s]) => t === id && s === step.until[1])) {
          if (Date.now() > deadline) throw new Error(`no status ${step.until[1]} of ${id} within 60 s`);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      return { op: step.op, as: step.as, statuses: state.statuses };
    }
    case "close":
      // Over HTTP the session is ended; over stdio closing ends it.
      if (state.transport.terminateSession) await state.transport.terminateSession();
      await state.client.close();
      clients.delete(step.as);
      return { op: step.op, as: step.as };
    default:
      throw new Error(`unknown step ${JSON.stringify(step)}`);
  }
}

for (const step of steps) {
  if (step.op === "connect") {
    emit({ op: step.op, as: step.as, tasks: await connect(step.as, step.token) });
    continue;
  }
  const state = clients.get(step.as);
  if (!state) throw new Error(`no client ${step.as}`);
  emit(await run(step, state));
}
for (const state of clients.values()) await state.client.close();
