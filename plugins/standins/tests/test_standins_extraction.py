"""Rule-based fact extraction on the reference scenario (Sunday 2026-09-27, ~20:50 JST)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omoide_standins.chat import _sudachi_tokenizer
from omoide_standins.extraction import extract_facts, facts_json, parse_conversation

REFERENCE_CONVERSATION = """以下の会話から、ユーザーについての事実を抽出してください。
<conversation>
[2026-09-27 20:46 (日)] user: 駅前に新しいラーメン屋ができたから行ってきたよ
[2026-09-27 20:46 (日)] assistant: いいね！何を食べたの？
[2026-09-27 20:47 (日)] user: みそラーメンを食べたんだけど、すごくおいしかった
[2026-09-27 20:47 (日)] assistant: おいしそう！
[2026-09-27 20:48 (日)] user: また行きたいな
[2026-09-27 20:48 (日)] assistant: また行けるといいね。
[2026-09-27 20:50 (日)] user: 来週の土曜日に友達と箱根に行くんだ
[2026-09-27 20:50 (日)] assistant: いいね！楽しんできてね。
[2026-09-27 20:51 (日)] user: 最近、仕事終わりにギターの練習をしてるんだ
[2026-09-27 20:51 (日)] assistant: すごい！どんな曲を弾いてるの？
</conversation>"""


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return _sudachi_tokenizer()


@pytest.fixture(scope="module")
def facts(tokenizer: Any) -> list[dict[str, Any]]:
    return json.loads(facts_json(REFERENCE_CONVERSATION, tokenizer))["facts"]


def test_the_hakone_plan_is_written_as_the_reference_writes_it(
        facts: list[dict[str, Any]]) -> None:
    assert {"text": "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。",
            "kind": "plan", "profile": False, "category": None, "entities": ["箱根"]} in facts


def test_the_ramen_visit_is_an_event(facts: list[dict[str, Any]]) -> None:
    assert {"text": "あなたは駅前に新しいラーメン屋ができたから行ってきた。",
            "kind": "event", "profile": False, "category": None, "entities": []} in facts


def test_wanting_to_go_again_continues_the_ramen_fact(facts: list[dict[str, Any]]) -> None:
    assert {"text": "あなたはみそラーメンを食べたところ、すごくおいしかったので、"
                    "また行きたいと思っている。",
            "kind": "preference", "profile": False, "category": None, "entities": []} in facts


def test_guitar_practice_is_a_habit_and_a_profile_fact(facts: list[dict[str, Any]]) -> None:
    assert {"text": "あなたは最近、仕事終わりにギターの練習をしている。",
            "kind": "habit", "profile": True, "category": "habit", "entities": []} in facts


def test_only_user_lines_become_facts_and_all_are_about_anata(
        facts: list[dict[str, Any]]) -> None:
    assert len(facts) == 4
    for fact in facts:
        assert fact["text"].startswith("あなた") and fact["text"].endswith("。")
        assert "楽しんで" not in fact["text"] and "ユーザー" not in fact["text"]


def test_questions_greetings_and_weather_are_skipped(tokenizer: Any) -> None:
    prompt = """<conversation>
[2026-09-27 20:52 (日)] user: こんばんは！
[2026-09-27 20:52 (日)] user: 明日の天気はどうかな？
[2026-09-27 20:53 (日)] user: 日本で一番高い山は？
[2026-09-27 20:53 (日)] user: 週末の予定覚えてる?
</conversation>"""
    assert json.loads(facts_json(prompt, tokenizer)) == {"facts": []}


def test_questions_a_recogniser_wrote_with_a_full_stop_are_still_skipped(
        tokenizer: Any) -> None:
    prompt = """<conversation>
[2026-11-30 21:00 (月)] user: 日本で一番高い山は。
[2026-11-30 21:00 (月)] user: 週末の予定覚えてる。
[2026-11-30 21:01 (月)] user: 富士山の高さ知ってる
[2026-11-30 21:01 (月)] user: 来週の土曜日に友達と箱根に行くんだ。
</conversation>"""
    facts = json.loads(facts_json(prompt, tokenizer))["facts"]
    assert [f["text"] for f in facts] == [
        "あなたは来週の土曜日（2026年12月12日）に友達と箱根に行く予定だ。"]


def test_first_person_becomes_anata_and_polite_forms_become_plain(tokenizer: Any) -> None:
    prompt = """<conversation>
[2026-10-01 19:00 (木)] user: 私は猫が好きなんです。僕の趣味は釣りだよ。毎朝ジョギングしてます
</conversation>"""
    texts = [f.text for f in extract_facts(parse_conversation(prompt), tokenizer)]
    assert texts == ["あなたは猫が好きだ。", "あなたの趣味は釣りだ。",
                     "あなたは毎朝ジョギングしている。"]


def test_dates_are_resolved_from_each_lines_own_timestamp(tokenizer: Any) -> None:
    prompt = """<conversation>
[2026-10-01 19:00 (木)] user: 今度の金曜に佐藤さんと大阪で飲み会があるんだ
</conversation>"""
    [fact] = extract_facts(parse_conversation(prompt), tokenizer)
    assert fact.text == "あなたは今度の金曜（2026年10月2日）に佐藤さんと大阪で飲み会がある予定だ。"
    assert fact.kind == "plan" and fact.entities == ["佐藤", "大阪"]


def test_a_prompt_without_a_conversation_gives_no_facts() -> None:
    assert json.loads(facts_json("会話はありません")) == {"facts": []}


def test_reactions_to_the_assistant_are_not_facts(tokenizer: Any) -> None:
    prompt = """<conversation>
[2026-09-27 20:52 (日)] user: それは楽しそうだね
[2026-09-27 20:52 (日)] user: へえ、すごいね
[2026-09-27 20:53 (日)] user: ありがとう、助かったよ
</conversation>"""
    assert extract_facts(parse_conversation(prompt), tokenizer) == []


def test_a_content_free_line_continues_a_fact_only_when_it_carries_on(
        tokenizer: Any) -> None:
    prompt = """<conversation>
[2026-09-27 20:50 (日)] user: パクチーが苦手なんだよね
[2026-09-27 20:51 (日)] user: 疲れたなあ
</conversation>"""
    texts = [f.text for f in extract_facts(parse_conversation(prompt), tokenizer)]
    assert texts == ["あなたはパクチーが苦手だ。"]


def test_family_and_pets_as_the_topic_become_anatas_own(tokenizer: Any) -> None:
    prompt = """<conversation>
[2026-09-27 20:50 (日)] user: 猫のむぎは3歳なんだ
[2026-09-27 20:51 (日)] user: 妻の美咲と世田谷に住んでるんだ
</conversation>"""
    texts = [f.text for f in extract_facts(parse_conversation(prompt), tokenizer)]
    assert texts == ["あなたの猫のむぎは3歳だ。", "あなたは妻の美咲と世田谷に住んでいる。"]


@pytest.mark.parametrize(("said", "kind"), [
    ("ラーメンより蕎麦派になった", "preference"),   # a changed preference stays a preference
    ("大阪に引っ越したんだ", "profile"),            # so does a move: the dedup can pair them
    ("立派な家に住んでる", "profile"),
])
def test_changes_of_a_preference_or_a_home_keep_their_kind(tokenizer: Any, said: str,
                                                           kind: str) -> None:
    from datetime import datetime

    from omoide_standins.extraction import Utterance
    [fact] = extract_facts([Utterance(datetime(2026, 9, 27, 20, 50), said)], tokenizer)
    assert fact.kind == kind
