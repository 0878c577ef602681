"""The profile reaches the chat model in every turn: an allergy is in the prompt of a food
question that names nothing the memory says, and the profile can be seen and edited."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from omoide.config import AssistantSettings
from omoide.memory.engine import MemoryEngine
from omoide.pipeline import sections
from omoide.pipeline.assistant import Assistant
from omoide.pipeline.turn import TurnRequest
from omoide.plugins import PluginRegistry
from omoide.testing.doubles import FakeChat, FakeTTS
from omoide.types import AudioClip, Emotion, Memory

NOW = datetime(2026, 12, 28, 11, 0, tzinfo=UTC)   # 20:00 JST
SAID = datetime(2026, 11, 2, 11, 0, tzinfo=UTC)


class QuietSink:
    async def on_transcript(self, text: str) -> None: ...

    async def on_emotion(self, emotion: Emotion) -> None: ...

    async def on_sentence(self, text: str, audio: AudioClip | None) -> None: ...


async def system_prompt(registry: PluginRegistry, engine: MemoryEngine, text: str) -> str:
    if not registry.pm.is_registered(sections):
        registry.pm.register(sections)
    assistant = Assistant(settings=AssistantSettings(), asr=None,
                          chat=FakeChat(FakeChat.Config()), tts=FakeTTS(FakeTTS.Config()),
                          memory=engine, hooks=registry.pm)
    await assistant.run_turn(TurnRequest(user="me", text=text, now=NOW), QuietSink())
    chat: Any = assistant.chat
    return str(chat.requests[0][0].content)


async def test_an_allergy_is_in_the_prompt_of_an_unrelated_food_question(
        registry: PluginRegistry, make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine()
    await engine.add_memories("me", [
        Memory("allergy", "me", "あなたはそばアレルギーがある。", SAID),
        Memory("trip", "me", "あなたは来月の3日（2026年12月3日）に箱根へ行った。", SAID)])
    system = await system_prompt(registry, engine, "大晦日の夜ごはん、何にしようかな")
    assert "<profile>" in system and "そばアレルギー" in system
    assert "<retrieved_memory>" not in system


async def test_the_profile_comes_before_the_episodic_memories(
        registry: PluginRegistry, make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine()
    await engine.add_memories("me", [
        Memory("allergy", "me", "あなたはそばアレルギーがある。", SAID),
        Memory("plan", "me", "あなたは大晦日（2026年12月31日）に年越しそばを食べに行く予定だ。", SAID)])
    system = await system_prompt(registry, engine, "大晦日の予定覚えてる?")
    assert system.index("<profile>") < system.index("<retrieved_memory>")


async def test_the_baseline_engine_has_no_profile(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: MemoryEngine = await make_engine()
    await engine.add_memories("me", [Memory("a", "me", "あなたはそばアレルギーがある。", SAID)])
    assert not (await engine.recall("me", "こんにちは", NOW, engine="baseline")).profile


async def test_set_show_and_forget_a_profile_fact(make_engine) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from omoide.memory.control.profile_edit import ProfileEditError, forget, mark, set_fact, view
    engine: MemoryEngine = await make_engine()
    added = await set_fact(engine, "me", "あなたは甲殻類アレルギーがある。")
    assert added.kind == "profile_health"
    assert [f.memory.id for f in (await view(engine, "me")).profile.facts] == [added.id]
    with pytest.raises(ProfileEditError, match="dated"):
        await set_fact(engine, "me", "あなたは来週の土曜日（2027年1月2日）に実家に帰る。")
    assert await forget(engine, "me", added.id, keep_memory=True)
    assert not (await view(engine, "me")).profile
    assert (await engine.get("me", added.id)) is not None
    await mark(engine, "me", added.id, True)
    assert (await view(engine, "me")).profile
    assert await forget(engine, "me", added.id)
    assert await engine.get("me", added.id) is None


async def test_a_profile_fact_survives_export_and_import(make_engine) -> None:  # type: ignore[no-untyped-def]
    from omoide.memory.control.profile_edit import set_fact
    engine: MemoryEngine = await make_engine()
    await set_fact(engine, "a", "あなたはそばアレルギーがある。")
    await engine.import_memories("b", await engine.export("a"))
    facts = (await engine.profile("b")).facts
    assert [(f.memory.text, f.memory.kind) for f in facts] == [
        ("あなたはそばアレルギーがある。", "profile_health")]
