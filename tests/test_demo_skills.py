"""Part 3 of ``omoide demo`` (skills): a timer goes off on the robot, a memory is forgotten
after a yes. Run against the real server with the stand-in chat and the skills plugin;
the robot types its lines instead of speaking them (ASR, TTS, embedder, store: doubles)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")
pytest.importorskip("omoide_skills")

from omoide.commands.demo import turn_observer
from omoide.commands.demo_skills import FORGET_LINES, SKILL_LINES, run_skills_part
from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.types import Memory
from omoide_device_stackchan.simulated_client import SimulatedStackChanClient


def _config(data_dir: Path, tools: str) -> dict[str, Any]:
    return yaml.safe_load(f"""
server: {{data_dir: {data_dir}}}
memory: {{extraction: {{on_disconnect: false}}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: standin, entities: false}}
tts: {{use: fake, ms_per_char: 10}}
devices: [{{use: stackchan}}]
tools: {tools}
""")


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(_config(tmp_path, "[{use: timers}, "
                                                                 "{use: memory}]")))
    await server.start(ready_timeout_s=60)
    yield server
    await server.stop()


def test_the_skills_lines_spoken_through_the_offline_recogniser_still_call_the_tools(
        ) -> None:
    """The demo speaks part 3 through Whisper (configs/offline.yaml) with the offline
    tools' phrases as recognition context, as a turn does: what it hears must still set
    a 10-second timer, ask to forget, and read as a yes."""
    import asyncio

    asr_whisper = pytest.importorskip("omoide_asr_whisper.asr")
    from omoide.commands.demo import synthesise_user_speech
    from omoide.components import RecognitionContext
    from omoide.pipeline.confirmation import Answer, read_answer
    from omoide_skills.clock import ClockTool
    from omoide_skills.memory_voice import MemoryTool
    from omoide_skills.timers import TimersTool
    from omoide_standins.tool_rules import timer_arguments

    phrases = [*ClockTool.recognition_phrases, *TimersTool.recognition_phrases,
               *MemoryTool.recognition_phrases]
    context = RecognitionContext.of(phrases, len(phrases))
    asr = asr_whisper.WhisperASR(asr_whisper.WhisperASRConfig(timeout_s=120, retries=0))

    async def hear_all() -> list[str]:
        await asr.start()
        try:
            return [(await asr.transcribe(synthesise_user_speech(line), context)).text
                    for line in SKILL_LINES]
        finally:
            await asr.stop()

    timer_heard, forget_heard, yes_heard = asyncio.run(hear_all())
    assert timer_arguments(timer_heard) == {"seconds": 10}, timer_heard
    assert "忘れて" in forget_heard, forget_heard
    assert read_answer(yes_heard) is Answer.YES, yes_heard


async def test_part_three_sets_a_timer_hears_it_and_forgets_after_a_yes(
        omoide: LoopbackOmoide, capsys: pytest.CaptureFixture[str]) -> None:
    await omoide.omoide.memory.add_memories("demo", [Memory(
        "m1", "demo", "あなたは来週の土曜日に友達と箱根に行く予定だ。",
        datetime.now(UTC))])
    observer = turn_observer()
    omoide.omoide.registry.pm.register(observer, name="test.observer")
    client = SimulatedStackChanClient(omoide.url, management_headers={})
    robot = client.robot
    omoide.device("stackchan").service.pairings.pair(robot.device_id, "demo")
    await robot.provision()
    await robot.connect()

    async def turn(index: int, line: str, **_: Any) -> None:
        reply = await robot.type_text(line)
        print(f"[{index}] {line} -> {reply.text}")

    try:
        await run_skills_part(omoide, client, observer, turn, 11, "demo",
                              timer_line="1秒タイマー")
    finally:
        await robot.close()
        omoide.omoide.registry.pm.unregister(observer)
    out = capsys.readouterr().out
    assert "tool calls: set_timer → ok" in out
    assert "unprompted, the robot says: 1秒のタイマーが終わったよ！" in out
    assert f"[12] {FORGET_LINES[0]} -> 「あなたは来週の土曜日に友達と箱根に行く予定だ」" in out
    assert "forget_memory → confirmed" in out
    assert "forgotten after the yes: あなたは来週の土曜日に友達と箱根に行く予定だ。" in out
    assert await omoide.omoide.memory.list_memories("demo") == []


async def test_without_the_skills_the_part_is_skipped_with_a_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = LoopbackOmoide(settings_from_data(_config(tmp_path, "[]")))
    await server.start(ready_timeout_s=60)
    try:
        await run_skills_part(server, None, None, None, 11, "demo")  # type: ignore[arg-type]
    finally:
        await server.stop()
    assert "skipped: the config lists no memory, timers tool" in capsys.readouterr().out
