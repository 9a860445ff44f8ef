"""Several real MCP clients (the Python `mcp` SDK), each its own session of
one server, that run a list of steps about tasks (MCP 2025-11-25) and print
one JSON object per step on stdout. The SDK has the task types but no
methods of its own for them: each request is its typed request sent
through the session's generic send_request, but the task-augmented
tools/call: the SDK (2.3.0) checks every tools/call answer as a
CallToolResult, which a CreateTaskResult is not, so that one request goes
through the session's dispatcher and its answer is read as the SDK's
CreateTaskResult here.

    python tasks.py --url URL STEPS_JSON

Steps (each names its client with "as"), as peers/tasks.mjs takes them:
  {"op": "connect", "as": "a"}  prints the server's `tasks` capability
  {"op": "start", "as": "a", "name": N, "args": {...}, "ttl": MS, "save": S?}
      a task-augmented tools/call; prints the task it created
  {"op": "tools", "as": "a"}  tools/list: [name, execution.taskSupport]
      of each tool that has one
  {"op": "get" | "result" | "cancel", "as": "a", "task": ID}
      prints the task (get, cancel), the text and related task (result),
      or the error
  {"op": "wait", "as": "a", "task": ID}  polls tasks/get (60 s at most)
      until the task is terminal; prints it
  {"op": "list", "as": "a"}  tasks/list: [id, status] each
  {"op": "statuses", "as": "a", "until": [ID, STATUS]?}  the
      notifications/tasks/status the client got: [taskId, status] each, in
      order (with until: once that one came, waiting 60 s at most)
Every session ends with the script (anyio's scopes close in the order
they opened, so one session cannot end alone). An ID "$name" is the id a start step with "save": "name" printed.
"""

import json
import sys
import time
from contextlib import AsyncExitStack

import anyio
from mcp import ClientSession, types
from mcp.client.extension import NotificationBinding
from mcp.client.streamable_http import streamable_http_client

TERMINAL = ("completed", "failed", "cancelled")


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def task_json(task):
    return task.model_dump(by_alias=True, mode="json", exclude_none=False)


def failure(e):
    error = getattr(e, "error", None)
    return {"error": {"code": getattr(error, "code", None), "message": str(getattr(error, "message", e))}}


class Client:
    def __init__(self, stack):
        self.stack = stack
        self.statuses = []
        self.session = None

    async def connect(self, url):
        read, write, *_ = await self.stack.enter_async_context(streamable_http_client(url))

        async def on_status(params):
            self.statuses.append([params.task_id, params.status])

        # The SDK surfaces a notification outside its tables only to a binding.
        binding = NotificationBinding(
            method="notifications/tasks/status",
            params_type=types.TaskStatusNotificationParams,
            handler=on_status,
        )
        self.session = await self.stack.enter_async_context(
            ClientSession(read, write, notification_bindings=[binding])
        )
        init = await self.session.initialize()
        tasks = getattr(init.capabilities, "tasks", None)
        if tasks is None:
            tasks = (init.capabilities.model_extra or {}).get("tasks")
        if tasks is not None and not isinstance(tasks, dict):
            tasks = tasks.model_dump(by_alias=True, mode="json", exclude_none=True)
        return tasks


async def step_of(client, step, task_id):
    s = client.session
    op = step["op"]
    out = {"op": op, "as": step["as"]}
    if op == "start":
        params = types.CallToolRequestParams(
            name=step["name"],
            arguments=step.get("args", {}),
            task=types.TaskMetadata(ttl=step.get("ttl", 60000)),
        ).model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            raw = await s._dispatcher.send_raw_request("tools/call", params, {})
        except Exception as e:  # a JSON-RPC error answer
            return out | failure(e)
        created = types.CreateTaskResult.model_validate(raw, by_name=False)
        return out | {"task": task_json(created.task)}
    if op in ("get", "wait"):
        deadline = time.monotonic() + 60
        while True:
            request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
            try:
                task = await s.send_request(request, types.GetTaskResult)
            except Exception as e:
                if op == "wait":
                    raise
                return out | failure(e)
            if op == "get" or task.status in TERMINAL:
                return out | {"task": task_json(task)}
            if time.monotonic() > deadline:
                raise RuntimeError(f"task {task_id} not done within 60 s: {task.status}")
            await anyio.sleep(0.2)
    if op == "result":
        request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
        try:
            result = await s.send_request(request, types.CallToolResult)
        except Exception as e:
            return out | failure(e)
        related = (result.meta or {}).get("io.modelcontextprotocol/related-task") or {}
        texts = "".join(getattr(c, "text", "") for c in result.content)
        return out | {"text": texts, "related": related.get("taskId")}
    if op == "cancel":
        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
        try:
            task = await s.send_request(request, types.CancelTaskResult)
        except Exception as e:
            return out | failure(e)
        return out | {"task": task_json(task)}
    if op == "tools":
        listed = await s.list_tools()
        tools = [
            [t.name, t.execution.task_support]
            for t in listed.tools
            if t.execution is not None and t.execution.task_support is not None
        ]
        return out | {"tools": tools}
    if op == "list":
        listed = await s.send_request(types.ListTasksRequest(), types.ListTasksResult)
        return out | {"tasks": [[t.task_id, t.status] for t in listed.tasks]}
    if op == "statuses":
        until = step.get("until")
        if until:
            wanted = [task_id, until[1]]
            with anyio.fail_after(60):
                while wanted not in client.statuses:
                    await anyio.sleep(0.05)
        return out | {"statuses": client.statuses}
    raise ValueError(f"unknown step {step!r}")


async def main():
    args = sys.argv[1:]
    if len(args) != 3 or args[0] != "--url":
        sys.exit("usage: tasks.py --url URL STEPS_JSON")
    url, steps = args[1], json.loads(args[2])
    clients = {}
    saved = {}
    async with AsyncExitStack() as stack:
        for step in steps:
            who = step["as"]
            if step["op"] == "connect":
                client = Client(stack)
                clients[who] = client
                emit({"op": "connect", "as": who, "tasks": await client.connect(url)})
                continue
            task = step.get("task") or (step.get("until") or [None])[0]
            if isinstance(task, str) and task.startswith("$"):
                task = saved[task[1:]]
            out = await step_of(clients[who], step, task)
            if step["op"] == "start" and "task" in out and step.get("save"):
                saved[step["save"]] = out["task"]["taskId"]
            emit(out)


if __name__ == "__main__":
    anyio.run(main)
