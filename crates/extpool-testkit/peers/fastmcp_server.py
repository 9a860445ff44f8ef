"""A small MCP server on the Python `mcp` SDK, for extpool's interop tests.

Tools: echo, add, structured (structured output). Resource: testkit://py/info.
Prompt: greet. Run it with the peers venv's Python:

    python fastmcp_server.py stdio
    python fastmcp_server.py http

In HTTP mode it binds 127.0.0.1 on a port the OS picks, then prints exactly
one line `LISTENING http://127.0.0.1:<port>/mcp` on stdout, so tests never
need a fixed port. Logs go to stderr.
"""

from __future__ import annotations

import socket
import sys

from pydantic import BaseModel

try:  # mcp >= 2: FastMCP was renamed MCPServer
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

mcp = Server("extpool-testkit-python")


class Item(BaseModel):
    """One item of the structured tool's output."""

    id: int
    name: str


class Items(BaseModel):
    """The structured tool's output: {"items": [{"id": 0, "name": "item-0"}, ...]}."""

    items: list[Item]


@mcp.tool()
def echo(message: str) -> str:
    """Returns message unchanged."""
    return message


@mcp.tool()
def add(a: float, b: float) -> str:
    """Returns the sum of a and b as text."""
    total = a + b
    return str(int(total)) if total == int(total) else str(total)


@mcp.tool()
def structured(count: int) -> Items:
    """Returns count items as structured content."""
    return Items(items=[Item(id=i, name=f"item-{i}") for i in range(count)])


@mcp.resource("testkit://py/info", name="info", mime_type="text/plain")
def info() -> str:
    """A short text resource."""
    return "extpool testkit python server"


@mcp.prompt()
def greet(name: str) -> str:
    """Greets someone by name."""
    return f"Hello, {name}!"


def serve_http() -> None:
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = mcp.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)
    # The socket already listens: connections queue until uvicorn accepts.
    print(f"LISTENING http://127.0.0.1:{port}/mcp", flush=True)
    anyio.run(lambda: server.serve(sockets=[sock]))


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        mcp.run("stdio")
    elif mode == "http":
        serve_http()
    else:
        print(f"usage: {sys.argv[0]} [stdio|http]", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
