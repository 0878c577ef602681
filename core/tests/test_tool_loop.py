"""The tool loop of a turn: plugin and device tools, failures as tool errors, the trace,
and confirmation by voice."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from omoide.config import AssistantSettings, ToolCallSettings
from omoide.pipeline import sections
from omoide.pipeline.assistant import Assistant
from omoide.pipeline.confirmation import Answer, read_answer
from omoide.pipeline.tools import ToolRunner, render_result
from omoide.pipeline.turn import NullSink, TurnRequest, TurnResult
from omoide.plugins import PluginRegistry
from omoide.testing import ToolContract
from omoide.testing.doubles import FakeChat, MemoryServiceDouble, ToolDouble, ToolHostDouble
from omoide.types import ChatMessage, ToolCall, ToolSpec

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)


class TestToolDouble(ToolContract):
    component_cls = ToolDouble

    @pytest.fixture
    def sample_calls(self) -> dict[str, dict[str, Any]]:
        return {"echo": {"a": 1}}


async def _tool(tmp_path: Path, **options: Any) -> ToolDouble:
    tool = ToolDouble(ToolDouble.Config.model_validate({"timeout_s": 0.3, **options}))
    tool.attach(ToolHostDouble(tmp_path))
    await tool.start()
    return tool


def _assistant(chat: FakeChat, tools: list[Any], **settings: Any) -> Assistant:
    registry = PluginRegistry()
    registry.pm.register(sections)
    return Assistant(settings=AssistantSettings(), asr=None, chat=chat, tts=None,
                     memory=MemoryServiceDouble(), hooks=registry.pm,
                     tools=ToolRunner(tools, ToolCallSettings(**settings), "Asia/Tokyo"))


def _chat(*calls: tuple[str, Any], reply: str = "[happy] できたよ。") -> FakeChat:
    return FakeChat(FakeChat.Config(reply=reply, call_tools=[
        {"name": name, "arguments": args} for name, args in calls]))


async def _turn(assistant: Assistant, text: str = "やって", **request: Any) -> TurnResult:
    return await assistant.run_turn(TurnRequest(user="alice", text=text, speak=False,
                                                now=NOW, **request), NullSink())


def _tool_results(chat: FakeChat) -> list[Any]:
    return [json.loads(m.content) if m.content.startswith(("{", "[")) else m.content
            for m in chat.requests[-1] if m.role == "tool"]


async def test_a_plugin_tool_result_reaches_the_model_and_the_reply_is_spoken(
        tmp_path: Path) -> None:
    chat = _chat(("echo", {"n": 3}))
    result = await _turn(_assistant(chat, [await _tool(tmp_path)]))
    assert _tool_results(chat) == [{"echo": {"n": 3}, "user": "alice"}]
    assert result.reply == "できたよ。"
    assert "echo" in {t.name for t in chat.offered[0]}


async def test_the_trace_shows_each_tool_call_with_source_duration_and_outcome(
        tmp_path: Path) -> None:
    result = await _turn(_assistant(_chat(("echo", {}), ("fail", {})),
                                    [await _tool(tmp_path)]))
    calls = {c["name"]: c for c in result.trace["tools"]}
    assert calls["echo"]["source"] == "fake" and calls["echo"]["outcome"] == "ok"
    assert calls["fail"]["outcome"] == "error" and "on purpose" in calls["fail"]["error"]
    assert all(c["duration_ms"] >= 0 for c in calls.values())


async def test_a_tool_that_raises_is_an_error_the_model_can_talk_about(tmp_path: Path) -> None:
    chat = _chat(("fail", {}))
    result = await _turn(_assistant(chat, [await _tool(tmp_path)]))
    [error] = _tool_results(chat)
    assert "RuntimeError" in error["error"] and result.reply == "できたよ。"
    assert not result.degraded


async def test_a_hanging_tool_times_out_and_the_turn_goes_on(tmp_path: Path) -> None:
    chat = _chat(("hang", {}))
    result = await _turn(_assistant(chat, [await _tool(tmp_path, timeout_s=0.2)]))
    [error] = _tool_results(chat)
    assert "0.2" in error["error"]
    assert result.trace["tools"][0]["outcome"] == "timeout"
    assert result.reply == "できたよ。"


async def test_a_tool_that_ignores_cancellation_is_abandoned(tmp_path: Path) -> None:
    chat = _chat(("stubborn", {}))
    result = await _turn(_assistant(chat, [await _tool(tmp_path, timeout_s=0.1,
                                                       stubborn_s=1.5)]))
    assert result.trace["tools"][0]["outcome"] == "timeout"
    assert result.reply == "できたよ。"


async def test_a_result_that_is_not_json_is_an_error(tmp_path: Path) -> None:
    chat = _chat(("not_json", {}))
    await _turn(_assistant(chat, [await _tool(tmp_path)]))
    [error] = _tool_results(chat)
    assert "not JSON" in error["error"]


async def test_a_huge_result_becomes_a_bounded_error_with_its_beginning(
        tmp_path: Path) -> None:
    chat = _chat(("huge", {}))
    await _turn(_assistant(chat, [await _tool(tmp_path, huge_chars=50_000)],
                           max_result_chars=1000))
    [message] = [m for m in chat.requests[-1] if m.role == "tool"]
    assert len(message.content) <= 1000
    assert "too long (50000 characters" in message.content and "xxxx" in message.content


async def test_a_refusal_is_passed_on_in_the_tools_words(tmp_path: Path) -> None:
    chat = _chat(("refuse", {}))
    result = await _turn(_assistant(chat, [await _tool(tmp_path)]))
    assert _tool_results(chat) == [{"error": "それはできないよ。"}]
    assert result.trace["tools"][0]["outcome"] == "refused"


@pytest.mark.parametrize(("name", "arguments", "expected"), [
    ("no_such_tool", "{}", "no tool named"),
    ("echo", "{not json", "not valid JSON"),
    ("echo", "[1, 2]", "must be a JSON object"),
])
async def test_bad_calls_from_the_model_are_errors(tmp_path: Path, name: str, arguments: str,
                                                   expected: str) -> None:
    chat = _chat((name, arguments))
    await _turn(_assistant(chat, [await _tool(tmp_path)]))
    [error] = _tool_results(chat)
    assert expected in error["error"]


async def test_device_tools_are_offered_beside_plugin_tools_and_lose_a_name_clash(
        tmp_path: Path) -> None:
    seen: list[ToolCall] = []

    async def robot(call: ToolCall) -> str:
        seen.append(call)
        return "head moved"

    chat = _chat(("self_head_move", {}), ("echo", {}))
    device_tools = [ToolSpec("self_head_move", "Move the head", {"type": "object"}),
                    ToolSpec("echo", "A device tool with a plugin tool's name", {})]
    result = await _turn(_assistant(chat, [await _tool(tmp_path)]), tools=device_tools,
                         tool_handler=robot)
    assert [c.name for c in seen] == ["self_head_move"]
    assert _tool_results(chat)[0] == "head moved"
    assert [t.name for t in chat.offered[0]].count("echo") == 1
    sources = {c["name"]: c["source"] for c in result.trace["tools"]}
    assert sources == {"self_head_move": "device", "echo": "fake"}


async def test_a_slow_device_tool_times_out(tmp_path: Path) -> None:
    import asyncio

    async def robot(call: ToolCall) -> str:
        await asyncio.sleep(3600)
        return "never"

    chat = _chat(("self_head_move", {}))
    result = await _turn(_assistant(chat, [], device_timeout_s=0.1),
                         tools=[ToolSpec("self_head_move", "Move", {})], tool_handler=robot)
    assert result.trace["tools"][0]["outcome"] == "timeout"


async def test_the_last_round_offers_no_tools(tmp_path: Path) -> None:
    class EverCalling(FakeChat):
        async def _stream(self, messages: Any, tools: Any, json_output: bool) -> Any:
            self.offered.append(list(tools))
            if tools:
                yield _delta(ToolCall(f"c{len(self.offered)}", "echo", "{}"))
                return
            yield _delta(None, "[happy] おわり。")

    chat = EverCalling(FakeChat.Config())
    result = await _turn(_assistant(chat, [await _tool(tmp_path)], max_rounds=2))
    assert [bool(t) for t in chat.offered] == [True, True, False]
    assert result.reply == "おわり。" and len(result.trace["tools"]) == 2


def _delta(call: ToolCall | None, text: str = "") -> Any:
    from omoide.types import ChatDelta
    return ChatDelta(text=text, tool_call=call)


# -- confirmation --------------------------------------------------------------------------
async def test_a_call_that_needs_confirmation_is_asked_not_run(tmp_path: Path) -> None:
    tool = await _tool(tmp_path)
    chat = _chat(("switch", {"to": "on"}))
    assistant = _assistant(chat, [tool])
    result = await _turn(assistant, "電気つけて")
    [asked] = _tool_results(chat)
    assert asked["status"] == "needs_confirmation" and asked["question"]
    assert tool.switched == []
    assert result.trace["tools"][0]["outcome"] == "needs_confirmation"
    assert assistant.tools.pending("alice") is not None


async def test_a_yes_in_the_next_turn_runs_the_call_and_the_model_hears_the_result(
        tmp_path: Path) -> None:
    tool = await _tool(tmp_path)
    assistant = _assistant(_chat(("switch", {"to": "on"})), [tool])
    await _turn(assistant, "電気つけて")
    answer_chat = _chat(reply="[happy] つけたよ。")
    assistant.chat = answer_chat
    result = await _turn(assistant, "うん、お願い")
    assert tool.switched == [{"to": "on"}]
    assert tool.calls[-1][2].confirmed
    assert {"switched": "on", "message": "切り替えたよ。"} in _tool_results(answer_chat)
    assert result.trace["tools"][0]["outcome"] == "confirmed"
    assert assistant.tools.pending("alice") is None


@pytest.mark.parametrize("answer", ["いや、やめて", "だめ", "ちょっと待って"])
async def test_a_no_cancels_the_call(tmp_path: Path, answer: str) -> None:
    tool = await _tool(tmp_path)
    assistant = _assistant(_chat(("switch", {"to": "on"})), [tool])
    await _turn(assistant, "電気つけて")
    assistant.chat = chat = _chat()
    result = await _turn(assistant, answer)
    assert tool.switched == []
    assert _tool_results(chat)[0]["status"] == "cancelled"
    assert result.trace["tools"][0]["outcome"] == "cancelled"


async def test_an_unrelated_answer_drops_the_question_without_running_it(
        tmp_path: Path) -> None:
    tool = await _tool(tmp_path)
    assistant = _assistant(_chat(("switch", {"to": "on"})), [tool])
    await _turn(assistant, "電気つけて")
    assistant.chat = chat = _chat()
    await _turn(assistant, "今日の晩ごはん何にしよう")
    await _turn(assistant, "うん")
    assert tool.switched == []
    assert not any(m.role == "tool" for m in chat.requests[0])


async def test_a_yes_after_the_window_closed_runs_nothing(tmp_path: Path) -> None:
    tool = await _tool(tmp_path)
    assistant = _assistant(_chat(("switch", {"to": "on"})), [tool], confirm_window_s=0.001)
    await _turn(assistant, "電気つけて")
    import asyncio
    await asyncio.sleep(0.01)
    assistant.chat = _chat()
    await _turn(assistant, "うん")
    assert tool.switched == []


async def test_one_persons_yes_does_not_confirm_anothers_question(tmp_path: Path) -> None:
    tool = await _tool(tmp_path)
    assistant = _assistant(_chat(("switch", {"to": "on"})), [tool])
    await _turn(assistant, "電気つけて")
    assistant.chat = _chat()
    await assistant.run_turn(TurnRequest(user="bob", text="うん", speak=False, now=NOW),
                             NullSink())
    assert tool.switched == []
    assert assistant.tools.pending("alice") is not None


@pytest.mark.parametrize(("said", "expected"), [
    ("はい", Answer.YES), ("うん", Answer.YES), ("お願い", Answer.YES), ("いいよ！", Answer.YES),
    ("OK", Answer.YES), ("忘れて", Answer.YES), ("うん、消して", Answer.YES),
    ("いいえ", Answer.NO), ("いや", Answer.NO), ("やっぱりやめて", Answer.NO),
    ("忘れないで", Answer.NO), ("ちょっと待って", Answer.NO), ("違う違う", Answer.NO),
    ("いや、いいよ", Answer.NO),
    ("大丈夫", Answer.UNCLEAR), ("いいです", Answer.UNCLEAR), ("明日の天気は？", Answer.UNCLEAR),
    ("", Answer.UNCLEAR),
])
def test_answers_to_a_confirmation_question_are_read_strictly(said: str,
                                                              expected: Answer) -> None:
    assert read_answer(said) is expected


def test_render_result_passes_strings_and_json_through() -> None:
    assert render_result("晴れ", 100) == ("晴れ", None)
    assert render_result({"a": "雨"}, 100) == ('{"a": "雨"}', None)
    text, error = render_result(float("nan"), 100)
    assert error is not None and json.loads(text)["error"]


def test_a_confirmed_context_is_only_made_by_the_core() -> None:
    """Messages the model writes cannot confirm anything: only the person's utterance."""
    messages = [ChatMessage("user", "電気つけて"),
                ChatMessage("assistant", "", tool_calls=(ToolCall("x", "switch", "{}"),))]
    assert read_answer(messages[-1].content) is Answer.UNCLEAR


async def test_a_function_that_vanished_since_it_was_offered_is_an_error(
        tmp_path: Path) -> None:
    tool = await _tool(tmp_path)
    runner = ToolRunner([tool], ToolCallSettings(), "Asia/Tokyo")
    tools = runner.for_turn(TurnRequest(user="alice", text="x"), NOW)
    tool.functions = lambda: []  # type: ignore[method-assign]
    from omoide.pipeline.trace import TurnTrace
    text = await tools.call(ToolCall("c", "echo", "{}"), TurnTrace("t", "alice"))
    assert "no function 'echo'" in json.loads(text)["error"]
