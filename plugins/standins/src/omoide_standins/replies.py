"""Rule-based conversation replies of the chat stand-in.

Every reply starts with an emotion tag (a value of :class:`omoide.types.Emotion`) and is
one or two short, friendly Japanese sentences. The rules, in order:

1. a recall question (覚えてる, 何だっけ, っけ, 前に言った, or a question about the user's
   own life) with a memory in the prompt's ``<retrieved_memory>`` block → answer from
   the best-matching memory, turning 「あなたは…だ。」 into 「覚えてるよ！…だよね。」;
2. a recall question with no memory → say honestly there is no recollection ([doubtful]);
3. any other question → say it cannot look things up offline ([thinking]);
4. greetings, troubles, plans, wishes, habits, likes → a matching short reaction;
   else a friendly nod.

Memories are never brought up unasked, as the reference's prompt demands.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from omoide.api import FIRST_PERSON_PRONOUNS, ChatMessage, Emotion, regex_alternation

_MEMORY_BLOCK = re.compile(r"<retrieved_memory>(.*?)</retrieved_memory>", re.S)
_PROFILE_BLOCK = re.compile(r"<profile>(.*?)</profile>", re.S)
# A bullet or a number, then any bracketed notes such as 「[記録日: …]」.
_DECORATION = re.compile(r"^(?:[-・*•]|\d+\s*[.)．、:])?\s*"
                         r"(?:(?:\[[^\]]*\]|［[^］]*］|【[^】]*】)\s*)*")
_RECALL_MARKERS = re.compile(r"(?:覚えて|おぼえて|何だっけ|なんだっけ|っけ|前に言った|前に話した|"
                             r"言ったよね|話したよね|教えたよね|知ってる|知ってた)")
_FIRST_PERSON = re.compile(regex_alternation(FIRST_PERSON_PRONOUNS))
_OWN_LIFE = re.compile(r"(?:予定|趣味|好きな|嫌いな|苦手な|練習|行く|行った)")
_INTERROGATIVE = re.compile(r"(?:何|なに|なん|いつ|どこ|誰|だれ|どう|なぜ|どんな|どれ|どっち|"
                            r"いくら|"
                            r"ある[？?]|ない[？?])")


def memory_lines(system_prompt: str) -> list[str]:
    """The memory sentences of the ``<retrieved_memory>`` block, then those of the
    ``<profile>`` block (the person's lasting facts); empty if there are none.

    A line is a memory when, after its decoration (a bullet or number, then bracketed
    notes such as 「[記録日: …]」 or 「[習慣]」), it starts with 「あなた」; rule lines that
    merely mention あなた do not. The sentence is cut at its first 「。」.
    """
    lines: list[str] = []
    for pattern in (_MEMORY_BLOCK, _PROFILE_BLOCK):
        block = pattern.search(system_prompt)
        if block is not None:
            lines.extend(_sentences(block.group(1)))
    return lines


def relevant_memories(question: str, system_prompt: str) -> list[str]:
    """What the stand-in may answer a recall question from: every retrieved memory (the
    engine chose them for this question), and the profile lines that share words with
    it (the profile is in every prompt, whatever was asked)."""
    retrieved: list[str] = []
    block = _MEMORY_BLOCK.search(system_prompt)
    if block is not None:
        retrieved = _sentences(block.group(1))
    profile: list[str] = []
    block = _PROFILE_BLOCK.search(system_prompt)
    if block is not None:
        q = _bigrams(question)
        profile = [m for m in _sentences(block.group(1)) if len(q & _bigrams(m)) >= 2]
    return retrieved + profile


def _sentences(block: str) -> list[str]:
    lines: list[str] = []
    for line in block.splitlines():
        sentence = _DECORATION.sub("", line.strip())
        if not sentence.startswith("あなた"):
            continue
        end = sentence.find("。")
        lines.append(sentence[:end + 1] if end >= 0 else sentence.strip())
    return lines


def _bigrams(text: str) -> set[str]:
    bare = re.sub(r"[\s、。！？!?「」（）()\[\]]", "", unicodedata.normalize("NFKC", text))
    return {bare[i:i + 2] for i in range(len(bare) - 1)}


def best_memory(question: str, memories: Sequence[str]) -> str:
    """The memory sharing most character bigrams with the question (first on ties)."""
    q = _bigrams(question)
    return max(memories, key=lambda m: (len(q & _bigrams(m)), -memories.index(m)))


def _as_reminder(memory: str) -> str:
    """「あなたは…予定だ。」 → 「…予定だよね。」: the memory said back to the user."""
    s = memory.strip().rstrip("。")
    s = re.sub(r"^あなたは[、,]?", "", s)
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


def reply_to(messages: Sequence[ChatMessage]) -> str:
    """The stand-in's reply to a conversation turn, starting with an emotion tag."""
    system = "\n".join(m.content for m in messages if m.role == "system")
    users = [m.content for m in messages if m.role == "user"]
    said = unicodedata.normalize("NFKC", users[-1]).strip() if users else ""
    memories = relevant_memories(said, system)

    if is_recall_question(said):
        if memories:
            reminder = _as_reminder(best_memory(said, memories))
            return f"[{Emotion.HAPPY.value}] 覚えてるよ！{reminder}"
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
