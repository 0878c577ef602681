"""The stand-in answers a recall question with the line that answers it: from what the
person said earlier in this conversation, a retrieved memory or a profile fact, and says
it does not know when none does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime

import pytest

from omoide.api import ProfileCategory, ProfileFact
from omoide.memory.recall.memory_block import render_memory_block, render_profile_block
from omoide.types import ChatMessage, Memory, RetrievedMemory
from omoide_standins.chat import StandinChat, StandinChatConfig, _sudachi_tokenizer
from omoide_standins.recollection import prompt_lines, read_question, turn_date

DATES = ("あなたは「かな」です。\n"
         "今日は2026年9月27日（日曜日）です。明日は2026年9月28日（月曜日）です。")
SAID = datetime(2026, 9, 20, 11, 0, tzinfo=UTC)
DONT_KNOW = "[doubtful] うーん、ごめんね。その話は聞いた覚えがないみたい。"


def _memories(*items: tuple[str, tuple[date, ...]]) -> str:
    return render_memory_block([RetrievedMemory(Memory(f"m{i}", "u1", text, SAID,
                                                       event_dates=dates), 0.9 - i / 10)
                                for i, (text, dates) in enumerate(items)], "Asia/Tokyo")


def _profile(*texts: str) -> str:
    return render_profile_block([ProfileFact(Memory(f"p{i}", "u1", text, SAID),
                                             ProfileCategory.HABIT)
                                 for i, text in enumerate(texts)])


PLANS = _memories(
    ("あなたは来月の16日（2026年10月16日）に歯医者の予約がある予定だ。", (date(2026, 10, 16),)),
    ("あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。", (date(2026, 10, 3),)),
    ("あなたはみそラーメンを食べたところ、すごくおいしかったので、また行きたいと思っている。",
     ()),
)
PROFILE = _profile("あなたは最近、仕事終わりにギターの練習をしている。",
                   "あなたはそばアレルギーがある。", "あなたはパクチーが苦手だ。")


@pytest.fixture
async def chat() -> AsyncIterator[StandinChat]:
    model = StandinChat(StandinChatConfig())
    await model.start()
    try:
        yield model
    finally:
        await model.stop()


async def _ask(chat: StandinChat, system: str, *said: str) -> str:
    """The reply to the last of ``said``, the others being this conversation so far."""
    messages = [ChatMessage("system", system)]
    for earlier in said[:-1]:
        messages += [ChatMessage("user", earlier), ChatMessage("assistant", "[happy] うん！")]
    return await chat.complete([*messages, ChatMessage("user", said[-1])])


async def test_a_plan_told_a_minute_ago_answers_a_question_about_it(chat: StandinChat) -> None:
    reply = await _ask(chat, DATES, "来週の土曜日に友達と箱根に行くんだ", "週末の予定覚えてる?")
    assert reply == ("[happy] さっき話してくれたね！来週の土曜日（2026年10月3日）に友達と"
                     "箱根に行く予定だよね。")


@pytest.mark.parametrize(("told", "asked", "carries"), [
    ("妹の名前はさくらだよ", "妹の名前なんだっけ", "さくら"),
    ("昨日は母と京都に行ったよ", "昨日どこに行ったんだっけ？", "京都"),
    ("私はパクチーが苦手なんだ", "私が苦手なものって何だっけ", "パクチー"),
    ("毎朝5時に起きてジョギングしてるんだ", "私が毎朝してること覚えてる？", "ジョギング"),
])
async def test_what_was_said_earlier_in_the_conversation_answers_later_questions(
        chat: StandinChat, told: str, asked: str, carries: str) -> None:
    reply = await _ask(chat, DATES + "\n" + PROFILE, told, "そうなんだ", asked)
    assert reply.startswith("[happy] さっき話してくれたね！") and carries in reply, reply


async def test_questions_the_conversation_does_not_answer_get_no_answer_from_it(
        chat: StandinChat) -> None:
    for asked in ("好きな映画覚えてる?", "弟の名前なんだっけ", "来週の予定覚えてる？"):
        reply = await _ask(chat, DATES, "昨日は母と京都に行ったよ", asked)
        assert reply.startswith(DONT_KNOW), (asked, reply)


@pytest.mark.parametrize(("asked", "carries"), [
    ("週末の予定覚えてる?", "箱根"),
    ("週末って何する予定だっけ", "箱根"),
    ("数末の予定を覚えている", "箱根"),           # 週末 as the recogniser may write it
    ("来週どこに行くんだっけ？", "箱根"),
    ("箱根には誰と行くんだっけ？", "友達"),
    ("はこねに行くのいつだっけ", "2026年10月3日"),
    ("来月の予定覚えてる？", "歯医者"),
    ("歯医者っていつだっけ？", "10月16日"),
    ("私の好きなラーメンって何だっけ？", "みそ"),
])
async def test_the_retrieved_memory_that_answers_is_chosen(chat: StandinChat, asked: str,
                                                           carries: str) -> None:
    reply = await _ask(chat, DATES + "\n" + PROFILE + "\n" + PLANS, asked)
    assert reply.startswith("[happy] 覚えてるよ！") and carries in reply, reply
    assert "ギター" not in reply, "a profile fact that answers nothing is not said"


@pytest.mark.parametrize(("asked", "carries"), [
    ("最近私が練習してることって何？", "ギター"),
    ("私のアレルギー覚えてる？", "そば"),
    ("私の苦手なもの覚えてる？", "パクチー"),
    ("ギターの練習っていつしてるんだっけ", "仕事終わり"),
])
async def test_a_profile_fact_answers_when_it_is_what_was_asked(chat: StandinChat, asked: str,
                                                                carries: str) -> None:
    reply = await _ask(chat, DATES + "\n" + PROFILE + "\n" + PLANS, asked)
    assert reply.startswith("[happy] 覚えてるよ！") and carries in reply, reply
    assert "箱根" not in reply


@pytest.mark.parametrize("asked", [
    "好きな映画覚えてる?",
    "妹の名前なんだっけ",
    "先週末何したっけ",            # the plans are ahead, nothing was done last weekend
    "私の好きなスポーツ覚えてる？",
    "何だっけ？",
])
async def test_when_nothing_answers_it_says_it_does_not_know(chat: StandinChat,
                                                             asked: str) -> None:
    reply = await _ask(chat, DATES + "\n" + PROFILE + "\n" + PLANS, asked)
    assert reply.startswith(DONT_KNOW), reply
    assert not any(word in reply for word in ("箱根", "ギター", "ラーメン", "歯医者", "そば"))


async def test_a_like_is_not_answered_with_a_dislike(chat: StandinChat) -> None:
    reply = await _ask(chat, DATES + "\n" + _profile("あなたはパクチーが苦手だ。"),
                       "私の好きなもの覚えてる？")
    assert reply.startswith(DONT_KNOW), reply


async def test_the_weekend_is_the_one_ahead_of_the_turns_date(chat: StandinChat) -> None:
    # asked on Monday 2026-10-05, the Hakone trip of Saturday 2026-10-03 is behind
    monday = "今日は2026年10月5日（月曜日）です。"
    reply = await _ask(chat, monday + "\n" + PLANS, "週末の予定覚えてる?")
    assert "箱根" not in reply, reply


def test_the_turns_date_is_read_from_the_date_block() -> None:
    assert turn_date(DATES) == date(2026, 9, 27)


def test_memory_lines_carry_their_event_dates_and_source() -> None:
    lines = prompt_lines(PLANS + "\n" + PROFILE)
    hakone = next(line for line in lines if "箱根" in line.text)
    assert hakone.dates == (date(2026, 10, 3),) and hakone.source == "memory"
    assert {line.source for line in lines if "ギター" in line.text} == {"profile"}


def test_a_question_is_read_into_what_it_is_about_and_the_days_it_names() -> None:
    tokenizer = _sudachi_tokenizer()
    question = read_question("週末の予定覚えてる?", date(2026, 9, 27), tokenizer)
    assert question.topics == () and "plan" in question.kinds
    assert [(d.first, d.last) for d in question.days] == [(date(2026, 10, 3), date(2026, 10, 4))]
    practice = read_question("最近私が練習してることって何？", date(2026, 9, 27), tokenizer)
    assert [w.lemma for w in practice.topics] == ["練習"] and "habit" in practice.kinds
