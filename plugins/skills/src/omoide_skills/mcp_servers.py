"""The ``mcp`` tool: the tools of one MCP server, offered to the chat model.

One list entry per server, over stdio (omoide starts the server as a subprocess) or
streamable HTTP, through the official ``mcp`` SDK::

    tools:
      - {use: mcp, server: files, command: npx,
         args: [-y, "@modelcontextprotocol/server-filesystem", /srv]}
      - {use: mcp, server: calendar, url: http://127.0.0.1:9000/mcp,
         headers: {Authorization: {$env: CALENDAR_AUTH}}}

The server's tools are offered as ``<server>_<tool>`` (names the chat APIs accept).
The connection lives in one background task (the SDK's transports must be opened and
closed in the same task). A server that dies or drops the connection makes the call
in flight a tool error; the next call reconnects (after ``reconnect_delay_s``), and the
tool list of the last good connection stays offered meanwhile. A server that cannot be
reached at start leaves the tool with no functions (``required: true`` makes that a
start failure instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field, model_validator

from omoide.api import ComponentError, Tool, ToolConfig, ToolContext, ToolError, ToolFunction

log = logging.getLogger("omoide.skills.mcp")

MAX_TOOLS = 64
MAX_LIST_PAGES = 8


class McpServerConfig(ToolConfig):
    server: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,23}$",
                        description="Short name of the server; its tools are offered as "
                                    "`<server>_<tool>`.")
    command: str | None = Field(None, description="stdio: the program that runs the server.")
    args: list[str] = Field(default_factory=list, description="stdio: its arguments.")
    env: dict[str, str] = Field(default_factory=dict,
                                description="stdio: extra environment variables (secrets "
                                            "as {$env: NAME}).")
    cwd: str | None = Field(None, description="stdio: working directory of the server.")
    url: str | None = Field(None, description="Streamable HTTP: the server's MCP endpoint.")
    headers: dict[str, str] = Field(default_factory=dict,
                                    description="Streamable HTTP: extra request headers "
                                                "(secrets as {$env: NAME}).")
    connect_timeout_s: float = Field(15.0, gt=0, le=300,
                                     description="Time to start, initialise and list tools.")
    reconnect_delay_s: float = Field(2.0, ge=0, le=600,
                                     description="Least wait between connection attempts.")
    required: bool = Field(False, description="Fail omoide's start when the server cannot "
                                              "be reached (default: start without its tools).")
    confirm_tools: list[str] = Field(
        default_factory=list, description="Tools (by the server's own names) the person must "
                                          "confirm before they run; `*` for all.")
    only_tools: list[str] | None = Field(
        None, description="Offer only these tools of the server (default: all it lists).")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (stdio) or `url` "
                             "(streamable HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return self


def chat_name(server: str, tool: str) -> str:
    """``<server>_<tool>`` with every character the chat APIs refuse made ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}_{tool}")[:64]


class McpServerTool(Tool):
    """Offers one MCP server's tools; reconnects when the server goes away."""

    name = "mcp"
    Config: ClassVar[type[McpServerConfig]] = McpServerConfig
    config: McpServerConfig

    def __init__(self, config: McpServerConfig) -> None:
        super().__init__(config)
        self._functions: dict[str, tuple[str, ToolFunction]] = {}   # chat name -> (mcp name, fn)
        self._session: Any = None
        self._broken = asyncio.Event()
        self._wanted = asyncio.Event()
        self._attempts_started = 0
        self._last_failed = 0
        """Number of the last connection attempt that failed (attempts count from 1)."""
        self._changed = asyncio.Condition()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._last_error: str | None = None
        self.connections = 0
        """How many times a connection was established (tests watch reconnects)."""

    # -- lifecycle -------------------------------------------------------------------
    async def _start(self) -> None:
        self._stopping = False
        self._wanted.set()
        self._task = asyncio.create_task(self._keep_connected(),
                                         name=f"omoide-mcp-{self.config.server}")
        if not await self._wait_for_connection():
            message = (f"MCP server {self.config.server} is not reachable: "
                       f"{self._last_error or 'no answer'}")
            if self.config.required:
                await self._stop()
                raise ComponentError(message) from None
            log.warning("%s; starting without its tools", message)

    async def _stop(self) -> None:
        self._stopping = True
        self._broken.set()
        self._wanted.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _wait_for_connection(self) -> bool:
        """Ask for a connection and wait until there is one (True), or until an attempt
        begun after this call has failed, or ``connect_timeout_s`` passed (False)."""
        asked_after = self._attempts_started
        self._wanted.set()

        def settled() -> bool:
            return self._session is not None or self._last_failed > asked_after

        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(settled),
                                       self.config.connect_timeout_s)
        except TimeoutError:
            return False
        return self._session is not None

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _transport(self) -> Any:
        cfg = self.config
        if cfg.command is not None:
            import os

            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client
            env = {**os.environ, **cfg.env} if cfg.env else None
            return stdio_client(StdioServerParameters(command=cfg.command, args=cfg.args,
                                                      env=env, cwd=cfg.cwd))
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
        assert cfg.url is not None
        client = create_mcp_http_client(headers=dict(cfg.headers) or None)
        return _closing_client(streamable_http_client(cfg.url, http_client=client), client)

    async def _keep_connected(self) -> None:
        from mcp import ClientSession

        while not self._stopping:
            await self._wanted.wait()
            self._wanted.clear()
            self._broken.clear()
            self._attempts_started += 1
            attempt = self._attempts_started
            connected = False
            try:
                async with self._transport() as streams, \
                        ClientSession(streams[0], streams[1]) as session:
                    await asyncio.wait_for(session.initialize(), self.config.connect_timeout_s)
                    self._functions = await asyncio.wait_for(
                        self._list_tools(session), self.config.connect_timeout_s)
                    self._session = session
                    self.connections += 1
                    connected = True
                    self._last_error = None
                    await self._notify()
                    log.info("MCP server %s: connected, %d tools", self.config.server,
                             len(self._functions))
                    await self._broken.wait()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - anyio raises exception groups
                self._last_error = _describe(exc)
                log.warning("MCP server %s: connection failed: %s", self.config.server,
                            self._last_error)
            finally:
                self._session = None
            if not connected:
                self._last_failed = attempt
            await self._notify()
            if self._stopping:
                return
            # then reconnect when someone needs the server again (``_wanted``)
            await asyncio.sleep(self.config.reconnect_delay_s)

    async def _list_tools(self, session: Any) -> dict[str, tuple[str, ToolFunction]]:
        from mcp.types import PaginatedRequestParams

        found: dict[str, tuple[str, ToolFunction]] = {}
        cursor: str | None = None
        only = set(self.config.only_tools) if self.config.only_tools is not None else None
        confirm = set(self.config.confirm_tools)
        for _ in range(MAX_LIST_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            for tool in page.tools:
                if only is not None and tool.name not in only:
                    continue
                if len(found) >= MAX_TOOLS:
                    break
                schema = tool.input_schema if isinstance(tool.input_schema, dict) else {
                    "type": "object", "properties": {}}
                name = chat_name(self.config.server, tool.name)
                found[name] = (tool.name, ToolFunction(
                    name, tool.description or tool.name, schema,
                    needs_confirmation="*" in confirm or tool.name in confirm))
            cursor = page.next_cursor
            if not cursor:
                break
        return found

    # -- tool ------------------------------------------------------------------------
    def functions(self) -> Sequence[ToolFunction]:
        return [fn for _, fn in self._functions.values()]

    async def _session_now(self) -> Any:
        if self._session is None and not await self._wait_for_connection():
            raise ComponentError(f"MCP server {self.config.server} is not reachable: "
                                 f"{self._last_error or 'no answer'}")
        return self._session

    async def _invoke(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> Any:
        entry = self._functions.get(function)
        if entry is None:
            raise ToolError(f"MCP server {self.config.server} has no tool {function!r}")
        session = await self._session_now()
        try:
            result = await session.call_tool(entry[0], arguments,
                                             read_timeout_seconds=self.config.timeout_s)
        except Exception as exc:
            from mcp import MCPError
            if isinstance(exc, MCPError) and not _connection_lost(exc):
                raise ToolError(f"{entry[0]}: {exc}") from exc
            if self._session is session:
                # drop this connection now; the next call waits for a new one
                self._session = None
                self._broken.set()
            raise ComponentError(f"MCP server {self.config.server} failed during "
                                 f"{entry[0]}: {_describe(exc)}") from exc
        return _result_value(result)


def _connection_lost(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(w in text for w in ("closed", "connection", "timed out", "eof"))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@contextlib.asynccontextmanager
async def _closing_client(transport: Any, client: Any) -> Any:
    """The streamable HTTP transport, and its HTTP client closed after it."""
    try:
        async with transport as streams:
            yield streams
    finally:
        await client.aclose()


def _result_value(result: Any) -> Any:
    """A CallToolResult as the model sees it: structured content, else the text parts."""
    content = getattr(result, "content", None) or []
    texts = [str(getattr(c, "text", "")) for c in content if getattr(c, "type", None) == "text"]
    if getattr(result, "is_error", False):
        raise ToolError("; ".join(texts) or "the MCP tool reported an error")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return structured
    if texts:
        return "\n".join(texts)
    return {"content": [getattr(c, "type", "?") for c in content]}
