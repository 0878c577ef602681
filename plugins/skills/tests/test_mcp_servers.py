"""MCP servers as tools: a real MCP server (the official SDK) over stdio and over
streamable HTTP, started by the tests."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from omoide.components import ToolContext, ToolError
from omoide.config import ToolCallSettings
from omoide.errors import ComponentError
from omoide.pipeline.tools import ToolRunner
from omoide.pipeline.trace import TurnTrace
from omoide.pipeline.turn import TurnRequest
from omoide.testing import ToolContract
from omoide.testing.contracts import now_utc
from omoide.testing.doubles import ToolHostDouble
from omoide.testing.http import LocalServer
from omoide.types import ToolCall
from omoide_skills.mcp_servers import McpServerTool, chat_name

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))
STDIO = {"server": "test", "command": sys.executable, "args": [SERVER]}


def _context() -> ToolContext:
    return ToolContext("alice", now_utc(), "Asia/Tokyo")


async def _started(tmp_path: Path, **options: Any) -> McpServerTool:
    tool = McpServerTool(McpServerTool.Config.model_validate({**STDIO, **options}))
    tool.attach(ToolHostDouble(tmp_path))
    await tool.start()
    return tool


@pytest.fixture
async def stdio_tool(tmp_path: Path) -> AsyncIterator[McpServerTool]:
    tool = await _started(tmp_path, timeout_s=10, reconnect_delay_s=0)
    yield tool
    await tool.stop()


class TestMcpOverStdio(ToolContract):
    component_cls = McpServerTool

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return dict(STDIO)

    @pytest.fixture
    def sample_calls(self) -> dict[str, dict[str, Any]]:
        return {"test_add": {"a": 1, "b": 2}, "test_shout": {"text": "hi"}}


async def test_the_servers_tools_are_offered_under_its_name(stdio_tool: McpServerTool) -> None:
    names = {fn.name for fn in stdio_tool.functions()}
    assert {"test_add", "test_shout", "test_lookup", "test_crash", "test_sleep"} <= names
    add = stdio_tool.function("test_add")
    assert add.parameters["properties"].keys() == {"a", "b"}
    assert add.description == "Add two numbers."


async def test_a_call_returns_the_servers_answer(stdio_tool: McpServerTool) -> None:
    assert await stdio_tool.invoke("test_add", {"a": 2, "b": 40}, _context()) == {"result": 42}
    assert await stdio_tool.invoke("test_shout", {"text": "やあ"}, _context()) == {
        "result": "やあ!"}


async def test_a_tool_error_reported_by_the_server_is_a_refusal(
        stdio_tool: McpServerTool) -> None:
    with pytest.raises(ToolError, match="no entry 'nope'"):
        await stdio_tool.invoke("test_lookup", {"key": "nope"}, _context())


async def test_a_server_that_dies_mid_call_is_an_error_and_the_next_call_reconnects(
        stdio_tool: McpServerTool) -> None:
    with pytest.raises(ComponentError, match="failed during crash"):
        await stdio_tool.invoke("test_crash", {}, _context())
    assert await stdio_tool.invoke("test_add", {"a": 1, "b": 1}, _context()) == {"result": 2}
    assert stdio_tool.connections == 2


async def test_in_a_turn_a_dying_server_is_a_tool_error_the_model_hears(
        stdio_tool: McpServerTool) -> None:
    runner = ToolRunner([stdio_tool], ToolCallSettings(), "Asia/Tokyo")
    tools = runner.for_turn(TurnRequest(user="alice", text="x"), now_utc())
    trace = TurnTrace("t", "alice")
    text = await tools.call(ToolCall("c1", "test_crash", "{}"), trace)
    assert "failed during crash" in text and text.startswith('{"error"')
    assert trace.tools[0]["outcome"] == "error" and trace.tools[0]["source"] == "mcp"


async def test_a_slow_tool_is_cut_at_its_time_budget(tmp_path: Path) -> None:
    tool = await _started(tmp_path, timeout_s=0.5)
    try:
        with pytest.raises(ComponentError):
            await tool.invoke("test_sleep", {"seconds": 30}, _context())
    finally:
        await tool.stop()


async def test_tools_can_be_limited_and_marked_for_confirmation(tmp_path: Path) -> None:
    tool = await _started(tmp_path, only_tools=["add", "shout"], confirm_tools=["add"])
    try:
        assert {fn.name for fn in tool.functions()} == {"test_add", "test_shout"}
        assert tool.function("test_add").needs_confirmation
        assert not tool.function("test_shout").needs_confirmation
    finally:
        await tool.stop()


async def test_a_server_that_cannot_start_leaves_no_tools_unless_required(
        tmp_path: Path) -> None:
    broken = {"command": sys.executable, "args": ["-c", "raise SystemExit(1)"],
              "connect_timeout_s": 10}
    tool = await _started(tmp_path, **broken)
    try:
        assert tool.functions() == []
        with pytest.raises(ToolError, match="no function"):
            await tool.invoke("test_add", {}, _context())
    finally:
        await tool.stop()
    with pytest.raises(ComponentError, match="not reachable"):
        await _started(tmp_path, **broken, required=True)


def test_exactly_one_transport_is_configured() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        McpServerTool.Config.model_validate({"server": "x"})
    with pytest.raises(ValueError, match="exactly one"):
        McpServerTool.Config.model_validate({"server": "x", "command": "a",
                                             "url": "http://h/mcp"})


def test_tool_names_are_made_acceptable_to_chat_apis() -> None:
    assert chat_name("home", "lights.turn-on/now") == "home_lights_turn-on_now"
    assert len(chat_name("s", "x" * 100)) == 64


# -- streamable HTTP -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def http_server() -> Any:
    sys.path.insert(0, str(Path(SERVER).parent))
    from mcp_test_server import build

    server = LocalServer(build().streamable_http_app(), lifespan="on")
    base = server.start()
    yield server, base
    server.stop()


async def test_a_streamable_http_server_lists_and_answers(http_server: Any,
                                                          tmp_path: Path) -> None:
    _, base = http_server
    tool = McpServerTool(McpServerTool.Config(server="web", url=f"{base}/mcp",
                                              headers={"X-Test": "1"}))
    tool.attach(ToolHostDouble(tmp_path))
    await tool.start()
    try:
        assert "web_add" in {fn.name for fn in tool.functions()}
        assert await tool.invoke("web_add", {"a": 20, "b": 22}, _context()) == {"result": 42}
    finally:
        await tool.stop()


async def test_an_http_server_that_is_not_there_is_an_error(free_port: int,
                                                            tmp_path: Path) -> None:
    tool = McpServerTool(McpServerTool.Config(server="gone",
                                              url=f"http://127.0.0.1:{free_port}/mcp",
                                              connect_timeout_s=5))
    tool.attach(ToolHostDouble(tmp_path))
    await tool.start()
    try:
        assert tool.functions() == []
        with pytest.raises(ToolError, match="no function"):
            await tool.invoke("gone_add", {"a": 1, "b": 2}, _context())
    finally:
        await tool.stop()
