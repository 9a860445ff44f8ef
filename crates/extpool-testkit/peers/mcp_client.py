"""A real MCP client (the Python `mcp` SDK) that runs a list of steps
against a server and prints one JSON object per step on stdout.

    python mcp_client.py (--url URL | --stdio CMD ARG...) STEPS_JSON

STEPS_JSON is a JSON list; each step is one of
  {"op": "list_tools", "describe": true?}   (describe: also {"descriptions": {name: text}})
  {"op": "call", "name": N, "args": {...}, "progress": true?, "expect_error": true?}
      (with expect_error, a JSON-RPC error is printed as
       {"op": "call", "error": MESSAGE, "code": CODE, "data": DATA})
  {"op": "list_prompts"} | {"op": "get_prompt", "name": N, "args": {...}}
  {"op": "list_resources"} | {"op": "read", "uri": U}
  {"op": "extensions"}   the server's capabilities.extensions, as it declared them
  {"op": "read_directory", "uri": U, "cursor": C?, "all_pages": true?, "expect_error": true?}
      SEP-2640 resources/directory/read, sent through the SDK's generic
      send_request (the SDK has no method of its own for it); prints the
      children's uri, name and mimeType and the nextCursor, a line per page
      (all_pages: every page, each asked with the cursor of the one before)
  {"op": "wait_tools_changed"}   waits for notifications/tools/list_changed
  {"op": "set_level", "level": L}   logging/setLevel
  {"op": "wait_logs", "count": N}   waits until N log messages (notifications/message)
      arrived since the last wait_logs, and prints their data in arrival order
Over HTTP, the environment variable MCP_CLIENT_BEARER, when set, is sent as
the bearer token of every request (Authorization: Bearer ...).
Sampling requests are answered with the text "sampled by the python client";
elicitation requests are accepted with content {"answer": "yes"}.
Used by extpool's tests and benchmarks; it never skips a step silently.
"""

import asyncio
import json
import os
import sys

from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def sampling(context, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled by the python client"),
        model="test-model",
    )


async def elicitation(context, params):
    return types.ElicitResult(action="accept", content={"answer": "yes"})


async def run(read, write, steps):
    changed = anyio.Event()
    logs = []
    logged = anyio.Event()

    async def on_log(params):
        logs.append(params.data)
        logged.set()

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root if hasattr(message, "root") else message, types.ToolListChangedNotification
        ):
            changed.set()
        elif isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with ClientSession(
        read,
        write,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        logging_callback=on_log,
        message_handler=on_message,
    ) as session:
        init = await session.initialize()
        extensions = init.capabilities.extensions or {}
        emit({"op": "initialize", "server": init.server_info.name, "protocol": init.protocol_version})
        for step in steps:
            op = step["op"]
            if op == "list_tools":
                r = await session.list_tools()
                out = {"op": op, "tools": [t.name for t in r.tools]}
                if step.get("describe"):
                    out["descriptions"] = {t.name: t.description for t in r.tools}
                emit(out)
            elif op == "call":
                progress = []

                async def on_progress(p, total, message):
                    progress.append(p)

                try:
                    r = await session.call_tool(
                        step["name"],
                        step.get("args", {}),
                        progress_callback=on_progress if step.get("progress") else None,
                    )
                except Exception as e:  # a JSON-RPC error answer
                    if not step.get("expect_error"):
                        raise
                    error = getattr(e, "error", None)
                    emit({"op": op, "error": str(e), "code": getattr(error, "code", None),
                          "data": getattr(error, "data", None)})
                    continue
                texts = [c.text for c in r.content if getattr(c, "type", "") == "text"]
                emit({"op": op, "is_error": bool(r.is_error), "text": texts, "progress": progress})
            elif op == "list_prompts":
                r = await session.list_prompts()
                emit({"op": op, "prompts": [p.name for p in r.prompts]})
            elif op == "get_prompt":
                r = await session.get_prompt(step["name"], step.get("args", {}))
                emit({"op": op, "text": [m.content.text for m in r.messages]})
            elif op == "list_resources":
                r = await session.list_resources()
                emit({"op": op, "resources": [str(x.uri) for x in r.resources]})
            elif op == "read":
                r = await session.read_resource(step["uri"])
                emit({"op": op, "text": [getattr(c, "text", None) for c in r.contents]})
            elif op == "extensions":
                emit({"op": op, "extensions": extensions})
            elif op == "read_directory":
                params = {"uri": step["uri"]}
                if step.get("cursor"):
                    params["cursor"] = step["cursor"]
                while True:
                    request = types.Request[dict[str, Any], str](method="resources/directory/read", params=params)
                    try:
                        r = await session.send_request(request, types.ListResourcesResult)
                    except Exception as e:  # a JSON-RPC error answer
                        if not step.get("expect_error"):
                            raise
                        emit({"op": op, "error": str(e), "code": getattr(getattr(e, "error", None), "code", None)})
                        break
                    children = [{"uri": str(x.uri), "name": x.name, "mimeType": x.mime_type} for x in r.resources]
                    emit({"op": op, "resources": children, "next_cursor": r.next_cursor})
                    if not (step.get("all_pages") and r.next_cursor):
                        break
                    params = {"uri": step["uri"], "cursor": r.next_cursor}
            elif op == "set_level":
                await session.set_logging_level(step["level"])
                emit({"op": op})
            elif op == "wait_logs":
                with anyio.fail_after(60):
                    while len(logs) < step["count"]:
                        await logged.wait()
                        logged = anyio.Event()
                got = logs[: step["count"]]
                del logs[: step["count"]]
                emit({"op": op, "logs": got})
            elif op == "wait_tools_changed":
                with anyio.fail_after(60):
                    await changed.wait()
                changed = anyio.Event()
                emit({"op": op})
            else:
                raise SystemExit(f"unknown step {op!r}")


async def main():
    args = sys.argv[1:]
    steps = json.loads(args[-1])
    if args[0] == "--url":
        bearer = os.environ.get("MCP_CLIENT_BEARER")
        if bearer:
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
            async with client, streamable_http_client(args[1], http_client=client) as streams:
                await run(streams[0], streams[1], steps)
        else:
            async with streamable_http_client(args[1]) as streams:
                await run(streams[0], streams[1], steps)
    elif args[0] == "--stdio":
        params = StdioServerParameters(command=args[1], args=args[2:-1])
        async with stdio_client(params) as (read, write):
            await run(read, write, steps)
    else:
        raise SystemExit("usage: mcp_client.py (--url URL | --stdio CMD ARG...) STEPS_JSON")


asyncio.run(main())
