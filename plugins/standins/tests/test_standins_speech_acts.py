"""Only statements become facts: questions, requests and greetings are read from grammar,
so a recogniser's missing 「？」 changes nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from omoide_standins.chat import _sudachi_tokenizer
from omoide_standins.extraction import Utterance, extract_facts
from omoide_standins.speech_acts import speech_act, strip_opening_interjections


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return _sudachi_tokenizer()


@pytest.mark.parametrize("said", [
    "おすすめの映画ある", "おすすめの映画ある。",   # a bare ある after a particle-less noun
    "時間ある", "近くに美味しいパン屋ある", "カレーの作り方わかる", "この曲知ってる",
    "明日晴れるかな", "傘持って行ったほうがいいかな",  # か／かな ends a question
    "この辺にコンビニあったっけ",                      # っけ
    "今日何食べよう", "うどんとそばどっちが好き", "犬って何歳まで生きるの",  # interrogatives
    "なんで空は青いの", "今何時",
])
def test_questions_without_a_question_mark_are_questions(tokenizer: Any, said: str) -> None:
    assert speech_act(said, tokenizer) == "question"


@pytest.mark.parametrize("said", [
    "音楽かけて", "ギターの弾き方教えてね",                   # a verb's て-form
    "電気を消してください", "明日7時に起こしてくれる", "天気予報を調べてもらえる",
    "駅までの道を教えてくれない", "一緒に考えてほしい", "教えろ",
])
def test_requests_to_the_assistant_are_requests(tokenizer: Any, said: str) -> None:
    assert speech_act(said, tokenizer) == "request"


@pytest.mark.parametrize("said", ["おはようございます", "こんばんは", "おやすみなさい",
                                  "ありがとうございます"])
def test_interjections_alone_are_greetings(tokenizer: Any, said: str) -> None:
    assert speech_act(said, tokenizer) == "greeting"


@pytest.mark.parametrize("said", [
    "家に猫がいる", "実家は福岡にある", "英語が少しわかる",     # が／は: a statement
    "母がいつも送ってくれる", "夫に早く帰ってきてほしい",      # someone else does it
    "息子が熱を出して", "何を食べたか忘れた",                  # an embedded question
    "誰とでもすぐ仲良くなれる", "どこにも行かなかった",        # indefinite, not asking
    "週末は実家に帰ろうかな",                                  # volitional + かな: intends
    "明日箱根に行く", "猫飼ってる", "映画が好きなの",
])
def test_statements_stay_statements(tokenizer: Any, said: str) -> None:
    assert speech_act(said, tokenizer) == "statement"


def test_a_greeting_that_opens_a_sentence_is_stripped(tokenizer: Any) -> None:
    assert strip_opening_interjections("おはよう、今日は箱根に行くんだ", tokenizer) == \
        "今日は箱根に行くんだ"
    assert strip_opening_interjections("うん、ありがとう、明日行く", tokenizer) == "明日行く"
    assert strip_opening_interjections("おはようございます", tokenizer) == "おはようございます"


def test_without_a_tokenizer_the_punctuation_rules_decide() -> None:
    assert speech_act("おすすめの映画ある", None) is None


def facts(said: str, tokenizer: Any) -> list[str]:
    return [f.text for f in extract_facts([Utterance(datetime(2026, 9, 27, 20, 50), said)],
                                          tokenizer)]


@pytest.mark.parametrize("said", ["おすすめの映画ある", "おすすめの映画ある？", "音楽かけて",
                                  "明日7時に起こしてくれる", "こんにちは、元気？",
                                  "おはようございます", "うどんとそばどっちが好き"])
def test_no_question_request_or_greeting_becomes_a_fact(tokenizer: Any, said: str) -> None:
    assert facts(said, tokenizer) == []


def test_an_intention_with_kana_is_a_plan_in_plain_words(tokenizer: Any) -> None:
    assert facts("週末は実家に帰ろうかな", tokenizer) == [
        "あなたは週末（2026年10月3日〜2026年10月4日）は実家に帰ろうと思っている。"]


def test_what_follows_a_greeting_is_still_a_fact(tokenizer: Any) -> None:
    [fact] = facts("おはよう、来週の土曜日に友達と箱根に行くんだ", tokenizer)
    assert fact == "あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。"
