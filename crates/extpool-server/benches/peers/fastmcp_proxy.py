"""FastMCP's proxy of a stdio server (`FastMCP.as_proxy`, called
`create_proxy` since FastMCP 3), served over streamable HTTP, for the
gateway benchmark.

Usage: python fastmcp_proxy.py <port> <command> [args...]
"""

import sys

from fastmcp import FastMCP
from fastmcp.client.transports import StdioTransport

try:
    from fastmcp.server.server import create_proxy
except ImportError:  # FastMCP 2.x
    create_proxy = FastMCP.as_proxy

port, command, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
proxy = create_proxy(StdioTransport(command=command, args=args), name="fastmcp-proxy")
proxy.run(transport="http", host="127.0.0.1", port=port, path="/mcp", log_level="warning")
