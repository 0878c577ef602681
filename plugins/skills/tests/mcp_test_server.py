"""A small MCP server the tests start: over stdio (``python mcp_test_server.py``) or as
a streamable HTTP app (:func:`build`). Built with the official SDK's ``MCPServer``.

Tools: ``add``; ``shout`` (text); ``lookup`` (refuses unknown keys with an MCP tool
error); ``crash`` (the process dies mid-call); ``sleep``.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build() -> MCPServer:
    server: MCPServer = MCPServer("omoide-test-server")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper() + "!"

    @server.tool()
    def lookup(key: str) -> str:
        """Look a key up."""
        if key != "known":
            raise ToolError(f"no entry {key!r}")
        return "found"

    @server.tool()
    def crash() -> str:
        """Kill the server process in the middle of the call."""
        sys.stdout.flush()
        os._exit(3)

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep, then answer."""
        await asyncio.sleep(seconds)
        return "awake"

    return server


if __name__ == "__main__":
    build().run(transport="stdio")
