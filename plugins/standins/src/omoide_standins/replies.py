"""Rule-based conversation replies of the chat stand-in.

Every reply starts with an emotion tag (a value of :class:`omoide.types.Emotion`) and is
one or two short, friendly Japanese sentences. The rules, in order:

1. a recall question (覚えてる, 何だっけ, っけ, 前に言った, or a question about the user's
   own life) that something the person said earlier in this conversation, a retrieved
   memory or a profile fact answers (:mod:`omoide_standins.recollection` picks the line
   that answers it, not one that merely shares a word) → say it back, turning
   「あなたは…だ。」 into 「覚えてるよ！…だよね。」 (「さっき話してくれたね！…」 for this
   conversation);
2. a recall question nothing answers → say honestly there is no recollection
   ([doubtful]), inventing nothing;
3. any other question → say it cannot look things up offline ([thinking]);
4. greetings, troubles, plans, wishes, habits, likes → a matching short reaction;
   else a friendly nod.

Memories are never brought up unasked, as the reference's prompt demands.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from omoide.api import FIRST_PERSON_PRONOUNS, ChatMessage, Emotion, regex_alternation
from omoide_standins.recollection import (
    Line,
    answering_line,
    history_lines,
    prompt_lines,
    read_question,
    turn_date,
)

_RECALL_MARKERS = re.compile(r"(?:覚えて|おぼえて|何だっけ|なんだっけ|っけ|前に言った|前に話した|"
                             r"言ったよね|話したよね|教えたよね|知ってる|知ってた)")
_FIRST_PERSON = re.compile(regex_alternation(FIRST_PERSON_PRONOUNS))
_OWN_LIFE = re.compile(r"(?:予定|趣味|好きな|嫌いな|苦手な|練習|行く|行った)")
_INTERROGATIVE = re.compile(r"(?:何|なに|なん|いつ|どこ|誰|だれ|どう|なぜ|どんな|どれ|どっち|"
                            r"いくら|"
                            r"ある[？?]|ない[？?])")


def memory_lines(system_prompt: str) -> list[str]:
    """The memory sentences of the ``<retrieved_memory>`` block, then those of the
    ``<profile>`` block (the person's lasting facts); empty if there are none
    (:func:`omoide_standins.recollection.prompt_lines` without their sources and days)."""
    return [line.text for line in prompt_lines(system_prompt)]


def recollection(messages: Sequence[ChatMessage], tokenizer: Any) -> Line | None:
    """The line of this conversation, the retrieved memories or the profile that answers
    the last user message, or None (:mod:`omoide_standins.recollection`)."""
    system = "\n".join(m.content for m in messages if m.role == "system")
    users = [m.content for m in messages if m.role == "user"]
    if not users:
        return None
    today = turn_date(system)
    lines = history_lines(messages, today, tokenizer) + prompt_lines(system)
    return answering_line(read_question(users[-1], today, tokenizer), lines, tokenizer)


def _as_reminder(memory: str) -> str:
    """「あなたは…予定だ。」 → 「…予定だよね。」: the memory said back to the user."""
    s = memory.strip().rstrip("。")
    s = re.sub(r"^あなた(?:は[、,]?|の)", "", s)
    if re.search(r"(?:だ|だった)$", s):
        return s + "よね。"
    if re.search(r"(?:[うくぐすつぬぶむるた]|ない|いる|しい|かった|[^な]い)$", s):
        return s + "んだよね。"
    return s + "、だったよね。"


def is_question(text: str) -> bool:
    s = text.strip().rstrip("！!…ー〜。")
    return s.endswith(("?", "？")) or bool(re.search(r"(?:か|かな|の|っけ)$", s) and
                                          _INTERROGATIVE.search(s))


def is_recall_question(text: str) -> bool:
    """A question about what the user said before, rather than about the world."""
    if _RECALL_MARKERS.search(text):
        return True
    return is_question(text) and bool(_FIRST_PERSON.search(text) or
                                      (_OWN_LIFE.search(text) and "あなた" not in text))


_GREETING_REPLIES: list[tuple[str, Emotion, str]] = [
    ("おはよう", Emotion.HAPPY, "おはよう！今日もいい一日になるといいね。"),
    ("こんにちは", Emotion.HAPPY, "こんにちは！今日はどんな一日だった？"),
    ("こんばんは", Emotion.RELAXED, "こんばんは！今日もお疲れさま。"),
    ("おやすみ", Emotion.SLEEPY, "おやすみなさい。また明日お話ししようね。"),
    ("ありがとう", Emotion.LOVING, "どういたしまして！いつでも話しかけてね。"),
    ("ただいま", Emotion.HAPPY, "おかえりなさい！今日はどうだった？"),
]
_PLAN = re.compile(r"(?:明日|あした|明後日|来週|今度|週末|来月|予定|つもり|行くんだ|行く予定)")
_LIKE = re.compile(r"(?:好き|美味し|おいし|最高|楽しかった|うれしい|嬉しい|気に入)")
_TROUBLE = re.compile(r"(?:疲れ|つかれ|悲し|かなし|つらい|辛かった|しんどい|落ち込|残念|寂し)")
_HABIT = re.compile(r"(?:最近|毎日|毎朝|毎晩|毎週|いつも|練習|続けて)")
_WISH = re.compile(r"たい(?:な|なあ|なぁ|の|んだ)?[。！!]?$")
_PAST = re.compile(r"(?:た|だった|てきた|ちゃった)(?:よ|んだ|の|ね|な)*[。！!]?$")


def reply_to(messages: Sequence[ChatMessage], tokenizer: Any) -> str:
    """The stand-in's reply to a conversation turn, starting with an emotion tag.

    ``tokenizer`` is a Sudachi tokenizer (mode C), with which recall questions are read.
    """
    users = [m.content for m in messages if m.role == "user"]
    said = unicodedata.normalize("NFKC", users[-1]).strip() if users else ""

    if is_recall_question(said):
        answer = recollection(messages, tokenizer)
        if answer is not None:
            opening = "さっき話してくれたね！" if answer.source == "history" else "覚えてるよ！"
            return f"[{Emotion.HAPPY.value}] {opening}{_as_reminder(answer.text)}"
        return (f"[{Emotion.DOUBTFUL.value}] うーん、ごめんね。その話は聞いた覚えがないみたい。"
                "よかったらもう一度教えてくれる？")
    if is_question(said):
        return (f"[{Emotion.THINKING.value}] ごめんね、わたしは今オフラインだから、"
                "調べて答えることができないんだ。")
    for word, emotion, line in _GREETING_REPLIES:
        if word in said:
            return f"[{emotion.value}] {line}"
    if _TROUBLE.search(said):
        return f"[{Emotion.SAD.value}] そっか、大変だったね。ゆっくり休んでね。"
    if _PLAN.search(said) and not _PAST.search(said):
        return f"[{Emotion.HAPPY.value}] いいね！楽しんできてね。"
    if _WISH.search(said):
        return f"[{Emotion.HAPPY.value}] いいね！きっと叶うよ。"
    if _HABIT.search(said):
        return f"[{Emotion.HAPPY.value}] すごいね！がんばってるんだね。"
    if _LIKE.search(said):
        return f"[{Emotion.LOVING.value}] いいね！聞いてるだけでうれしくなっちゃう。"
    if _PAST.search(said):
        return f"[{Emotion.HAPPY.value}] そうなんだ！教えてくれてありがとう。"
    return f"[{Emotion.RELAXED.value}] うんうん、そうなんだね。もっと聞かせて。"
