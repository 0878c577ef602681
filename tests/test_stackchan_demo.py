"""``omoide demo``: the scenario runs end to end and shows what was heard and misheard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")
pytest.importorskip("pyopenjtalk")

from omoide.commands.demo import (
    EXPECTED_FACTS,
    RECALL_QUESTIONS,
    SETUP_LINES,
    DemoTally,
    count_memory_answer,
    mishearings,
    prepare_config,
    reply_carries,
)

DOUBLES = """
assistant: {name: かな, timezone: Asia/Tokyo}
server: {data_dir: ./unused}
vad:   {use: fake}
asr:   {use: fake, text: 駅前に新しいラーメン屋ができたから行ってきたよ}
embed: {use: fake}
store: {use: fake}
chat:  {use: fake, reply: "[laughing] へえ。"}
tts:   {use: fake}
devices:
  - {use: stackchan}
"""


def test_prepared_config_moves_the_data_into_the_demo_folder(tmp_path: Path) -> None:
    source = tmp_path / "offline.yaml"
    source.write_text(yaml.safe_dump({
        "server": {"data_dir": "./data"}, "store": {"use": "qdrant", "path": "./data/q"},
        "asr": {"use": "whisper"}}, allow_unicode=True))
    data = prepare_config(source, tmp_path / "demo")
    assert data["server"]["data_dir"] == str(tmp_path / "demo")
    assert data["store"]["path"].startswith(str(tmp_path / "demo"))
    assert data["asr"] == {"use": "whisper"}


def test_mishearings_are_shown_piece_by_piece_ignoring_punctuation() -> None:
    heard = "来週の土曜日に友達と箱寝に行くんだ。"
    assert mishearings("来週の土曜日に友達と箱根に行くんだ", heard) == [("根", "寝")]
    assert mishearings("週末の予定覚えてる?", "週末の予定覚えてる？") == []
    assert mishearings("週末の予定覚えてる?", "週末の予定を覚えている") == [("", "を"), ("", "い")]


def test_every_memory_question_of_the_script_says_what_its_reply_must_carry() -> None:
    assert set(EXPECTED_FACTS) < set(RECALL_QUESTIONS)
    assert all(fact in " ".join(SETUP_LINES) for fact in EXPECTED_FACTS.values())


@pytest.mark.parametrize(("reply", "expected"), [
    ("[happy] 覚えてるよ！来週の土曜日に友達と箱根に行く予定だよね。", "箱根"),
    ("覚えてるよ！はこねに行くんだよね", "箱根"),
    ("味噌ラーメンがおいしかったんだよね。", "みそ"),
    ("ミソラーメンだよね", "みそ"),
    ("最近、ギター の練習をしているんだよね。", "ギター"),
])
def test_a_reply_carries_the_fact_in_its_letters_or_its_reading(reply: str,
                                                                expected: str) -> None:
    assert reply_carries(reply, expected)


@pytest.mark.parametrize(("reply", "expected"), [
    ("[happy] 覚えてるよ！最近、仕事終わりにギターの練習をしているんだよね。", "箱根"),
    ("[doubtful] うーん、ごめんね。その話は聞いた覚えがないみたい。", "みそ"),
    ("", "ギター"),
])
def test_a_reply_without_the_fact_does_not_carry_it(reply: str, expected: str) -> None:
    assert not reply_carries(reply, expected)


def _turn(memories: tuple[str, ...] = (), profile: tuple[str, ...] = ()) -> Any:
    from types import SimpleNamespace

    def held(text: str) -> Any:
        return SimpleNamespace(memory=SimpleNamespace(text=text))

    return SimpleNamespace(memories=[held(t) for t in memories],
                           profile=[held(t) for t in profile])


def test_an_answer_counts_as_from_memory_only_when_the_reply_carries_the_fact(
        capsys: pytest.CaptureFixture[str]) -> None:
    tally = DemoTally()
    hakone = "あなたは来週の土曜日に友達と箱根に行く予定だ。"
    guitar = "あなたは最近、仕事終わりにギターの練習をしている。"
    # the Hakone plan was recalled, but the reply spoke of the guitar from the profile
    count_memory_answer(tally, "箱根", "覚えてるよ！最近ギターの練習をしているんだよね。",
                        _turn((hakone,), (guitar,)))
    assert (tally.recalled, tally.retrieved, tally.memory_questions) == (0, 1, 1)
    count_memory_answer(tally, "箱根", "覚えてるよ！はこねに行く予定だよね。", _turn((hakone,)))
    assert (tally.recalled, tally.retrieved, tally.memory_questions) == (1, 2, 2)
    out = capsys.readouterr().out
    assert "expected from memory: 箱根 (NOT in the reply" in out
    assert "expected from memory: 箱根 (in the reply, and in the recalled" in out


def test_a_fact_only_said_earlier_in_the_conversation_is_counted_apart() -> None:
    tally = DemoTally()
    count_memory_answer(tally, "ギター", "さっき話してくれたね！ギターの練習だよね。", _turn())
    assert (tally.recalled, tally.from_conversation, tally.retrieved) == (0, 1, 0)


@pytest.mark.slow
def test_demo_runs_the_whole_scenario_with_test_doubles(omoide_cli: Any,
                                                        tmp_path: Path) -> None:
    config = tmp_path / "demo.yaml"
    config.write_text(DOUBLES, encoding="utf-8")
    result = omoide_cli("demo", "--config", str(config), "--fast", "--out",
                        str(tmp_path / "replies"), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for line in (*SETUP_LINES, *RECALL_QUESTIONS):
        assert f"user : {line}" in out
    assert out.count("robot 😆 [laughing]: へえ。") == 10
    assert out.count("ms after end of speech") == 10
    assert "activation code" in out and "== forced extraction" in out
    assert "what stood in for a real model" in out
    assert "heard exactly: 1 of 10 lines" in out   # the double hears one line for all
    # the double's 「へえ。」 carries none of the expected facts, whatever was recalled
    assert out.count("expected from memory:") == 3
    assert out.count("(NOT in the reply: not answered from memory)") == 3
    assert "recall questions answered from memory: 0 of 3" in out
    assert len(list((tmp_path / "replies").glob("reply-*.wav"))) == 10
