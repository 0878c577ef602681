"""Device MCP: the robot's tools reach the chat model, and calls are relayed safely."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from omoide.types import ToolCall
from omoide_device_stackchan.mcp import DeviceMcpClient, chat_tool_name
from omoide_device_stackchan.simulator import SimulatedStackChan
from omoide_device_stackchan.testing import LiveServer, start_server


async def robot_with_tools(server: LiveServer, **kw: object) -> SimulatedStackChan:
    robot = SimulatedStackChan(server.url, **kw)  # type: ignore[arg-type]
    await robot.provision()
    await robot.connect()
    for _ in range(100):          # initialize + paginated tools/list run in the background
        if robot.mcp_requests.count("tools/list") >= 2:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.05)
    return robot


def test_chat_tool_names_replace_dots() -> None:
    assert chat_tool_name("self.robot.set_head_angles") == "self_robot_set_head_angles"


async def test_hello_with_mcp_runs_initialize_and_every_tools_list_page(
        server: LiveServer) -> None:
    robot = await robot_with_tools(server, tools_page_size=4)
    try:
        await robot.type_text("こっち向いて")
    finally:
        await robot.close()
    assert robot.mcp_requests[:2] == ["initialize", "notifications/initialized"]
    assert robot.mcp_requests.count("tools/list") == 2     # six tools, four per page
    names = [t.name for t in server.host.requests[0].tools]
    assert "self_robot_set_head_angles" in names and "self_robot_set_led_color" in names
    assert len(names) == 6
    head = next(t for t in server.host.requests[0].tools
                if t.name == "self_robot_set_head_angles")
    assert head.parameters["properties"]["yaw"]["type"] == "integer"


async def test_a_tool_call_of_the_chat_model_reaches_the_robot(server: LiveServer) -> None:
    server.host.script.tool_call = ToolCall("call-1", "self_robot_set_head_angles",
                                            json.dumps({"yaw": 30, "pitch": 10}))
    robot = await robot_with_tools(server)
    try:
        reply = await robot.type_text("右を向いて")
    finally:
        await robot.close()
    assert reply.complete
    assert robot.tool_calls == [{"name": "self.robot.set_head_angles",
                                 "arguments": {"yaw": 30, "pitch": 10}}]
    assert server.host.tool_results == ["true"]


async def test_an_unknown_tool_becomes_a_tool_error(server: LiveServer) -> None:
    server.host.script.tool_call = ToolCall("call-1", "self_robot_fly", "{}")
    robot = await robot_with_tools(server)
    try:
        reply = await robot.type_text("飛んで")
    finally:
        await robot.close()
    assert reply.complete
    assert server.host.tool_results[0].startswith("error:")
    assert robot.tool_calls == []


async def test_a_device_error_becomes_a_tool_error(server: LiveServer) -> None:
    server.host.script.tool_call = ToolCall("call-1", "self_robot_set_led_color",
                                            '{"red": 1, "green": 2, "blue": 3}')
    robot = await robot_with_tools(server)
    robot.tools = [t for t in robot.tools if t["name"] != "self.robot.set_led_color"]
    try:
        reply = await robot.type_text("光って")
    finally:
        await robot.close()
    assert reply.complete
    assert "Unknown tool" in server.host.tool_results[0]
    assert server.host.tool_results[0].startswith("error:")


async def test_a_silent_device_becomes_a_tool_timeout_error(tmp_path: Path) -> None:
    srv = await start_server(tmp_path, pairing_required=False, mcp_timeout_s=0.3)
    srv.host.script.tool_call = ToolCall("c", "self_robot_get_head_angles", "")
    try:
        robot = await robot_with_tools(srv)
        robot.answer_tool_calls = False
        reply = await robot.type_text("頭の角度は？")
        await robot.close()
    finally:
        await srv.stop()
    assert reply.complete
    assert "did not answer" in srv.host.tool_results[0]


async def test_invalid_tool_arguments_become_a_tool_error() -> None:
    sent: list[dict[str, object]] = []

    async def send(payload: dict[str, object]) -> None:
        sent.append(payload)

    client = DeviceMcpClient(send)
    client._add_tool({"name": "self.robot.set_led_color", "inputSchema": {}})
    result = await client.call(ToolCall("c", "self_robot_set_led_color", "{not json"))
    assert result.startswith("error:") and sent == []


async def test_without_mcp_in_hello_no_tools_are_offered(server: LiveServer) -> None:
    robot = SimulatedStackChan(server.url, mcp=False)
    await robot.provision()
    await robot.connect()
    try:
        await robot.type_text("こんにちは")
    finally:
        await robot.close()
    assert robot.mcp_requests == []
    assert list(server.host.requests[0].tools) == []
    assert server.host.requests[0].tool_handler is None
