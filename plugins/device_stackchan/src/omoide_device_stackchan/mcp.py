"""The server side of device MCP: omoide is the MCP client, the robot the MCP server.

Over the device's WebSocket (``{"type": "mcp", "payload": <JSON-RPC 2.0>}``) we run
``initialize`` and a paginated ``tools/list``, offer the tools to the chat model and
relay its calls as ``tools/call``. A missing tool, a timeout or an error reported by
the device becomes an error *string* for the chat model; nothing here raises into
the turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from omoide.api import ToolCall, ToolSpec

log = logging.getLogger("omoide.device.stackchan")

PROTOCOL_VERSION = "2024-11-05"
MAX_TOOLS = 64
MAX_LIST_PAGES = 8

SendPayload = Callable[[dict[str, Any]], Awaitable[None]]


class McpError(Exception):
    """A request failed: the device answered with an error, timed out or went away."""


def chat_tool_name(device_tool: str) -> str:
    """A name the chat APIs accept (``^[a-zA-Z0-9_-]{1,64}$``): dots become underscores."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", device_tool)
    return name[:64] or "tool"


class DeviceMcpClient:
    """MCP client bound to one device connection."""

    def __init__(self, send: SendPayload, timeout_s: float = 10.0) -> None:
        self._send = send
        self.timeout_s = timeout_s
        self._next_id = 1
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._tools: dict[str, dict[str, Any]] = {}   # chat name -> device tool description
        self.ready = asyncio.Event()
        self.server_info: dict[str, Any] = {}

    # -- incoming ----------------------------------------------------------------
    def handle(self, payload: Any) -> None:
        """Route one JSON-RPC message from the device (response or notification)."""
        if not isinstance(payload, dict):
            log.warning("mcp: payload is not an object; ignored")
            return
        msg_id = payload.get("id")
        if "method" in payload and msg_id is None:
            log.info("mcp notification from device: %s", payload.get("method"))
            return
        future = self._pending.pop(msg_id, None) if isinstance(msg_id, int) else None
        if future is None:
            log.warning("mcp: response to unknown request id %r ignored", msg_id)
            return
        if not future.done():
            future.set_result(payload)

    def close(self) -> None:
        """The connection ended: fail every request still waiting."""
        for future in self._pending.values():
            if not future.done():
                future.set_exception(McpError("device disconnected"))
        self._pending.clear()

    # -- requests ----------------------------------------------------------------
    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and wait for its ``result`` (raises :class:`McpError`)."""
        msg_id = self._next_id
        self._next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self._send(message)
            async with asyncio.timeout(self.timeout_s):
                response = await future
        except TimeoutError:
            raise McpError(f"device did not answer {method} within {self.timeout_s:g}s") from None
        except McpError:
            raise
        except Exception as exc:  # the connection broke while sending
            raise McpError(f"cannot reach the device: {exc}") from exc
        finally:
            self._pending.pop(msg_id, None)
        if "error" in response:
            err = response.get("error") or {}
            text = err.get("message") if isinstance(err, dict) else str(err)
            raise McpError(f"device error: {text}")
        return response.get("result")

    async def notify(self, method: str) -> None:
        await self._send({"jsonrpc": "2.0", "method": method})

    async def start(self) -> None:
        """``initialize`` then ``tools/list`` (all pages). Failures leave no tools."""
        try:
            result = await self.request("initialize", {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "omoide", "version": "0.1"}})
            if isinstance(result, dict):
                self.server_info = dict(result.get("serverInfo") or {})
            await self.notify("notifications/initialized")
            cursor: str | None = ""
            for _ in range(MAX_LIST_PAGES):
                page = await self.request("tools/list", {"cursor": cursor or ""})
                if not isinstance(page, dict):
                    break
                for tool in page.get("tools") or []:
                    self._add_tool(tool)
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            log.info("mcp: device offers %d tools: %s", len(self._tools),
                     ", ".join(t["name"] for t in self._tools.values()))
        except McpError as exc:
            log.warning("mcp: setup failed (%s); the chat model gets no robot tools", exc)
        finally:
            self.ready.set()

    def _add_tool(self, tool: Any) -> None:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            return
        if len(self._tools) >= MAX_TOOLS:
            return
        self._tools[chat_tool_name(tool["name"])] = tool

    # -- what the turn sees ------------------------------------------------------
    def tool_specs(self) -> list[ToolSpec]:
        specs = []
        for name, tool in self._tools.items():
            schema = tool.get("inputSchema")
            if not isinstance(schema, dict):
                schema = {"type": "object", "properties": {}}
            specs.append(ToolSpec(name, str(tool.get("description") or tool["name"]), schema))
        return specs

    async def call(self, call: ToolCall) -> str:
        """Relay one chat-model tool call; always returns a string for the model."""
        tool = self._tools.get(call.name)
        if tool is None:
            return f"error: the robot has no tool named {call.name!r}"
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            return f"error: arguments for {call.name} are not valid JSON"
        if not isinstance(arguments, dict):
            return f"error: arguments for {call.name} must be a JSON object"
        try:
            result = await self.request("tools/call", {"name": tool["name"],
                                                       "arguments": arguments})
        except McpError as exc:
            log.warning("mcp: tools/call %s failed: %s", tool["name"], exc)
            return f"error: {exc}"
        return _result_text(result)


def _result_text(result: Any) -> str:
    if not isinstance(result, dict):
        return json.dumps(result, ensure_ascii=False)
    parts = [str(c.get("text", "")) for c in result.get("content") or []
             if isinstance(c, dict) and c.get("type") == "text"]
    text = "\n".join(parts) if parts else json.dumps(result, ensure_ascii=False)
    return f"error: {text}" if result.get("isError") else text
