"""The line a moment says, written by the chat model from the memories behind it.

The prompt carries a ``<moment>`` block (kind, how far the day is — 明日 / 今日 / a
past day — the topic and the memories); the offline stand-in has a rule per kind. When
the chat model fails or says nothing, a plain line per kind is said instead (the moment
is still worth saying), and the failure is logged.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import TYPE_CHECKING

from omoide.moments.model import Moment, MomentKind
from omoide.pipeline.emotion import parse_emotion
from omoide.types import ChatMessage

if TYPE_CHECKING:
    from omoide.components import ChatModel

log = logging.getLogger("omoide.moments")

MAX_CHARS = 120

_INSTRUCTION = (
    "あなたは家庭用ロボットです。相手に自分から短く話しかけます。<moment>の記憶だけをもとに、"
    "一言か二言（{limit}字以内）で、やさしい話し言葉で言ってください。記憶にない事実は足さないこと。"
    "kind の意味: day_before=予定の前日に声をかける / morning_of=予定の当日の朝に送り出す / "
    "follow_up=予定が終わったあとにどうだったか尋ねる / birthday=家族の誕生日の前日に知らせる / "
    "reminder=頼まれた時刻に習慣を思い出させる。")


def relative_day(day: date, today: date) -> str:
    """明日 / 今日 / 昨日 / N日前 / N日後 for ``day`` seen from ``today``."""
    delta = (day - today).days
    names = {-1: "昨日", 0: "今日", 1: "明日", 2: "あさって"}
    if delta in names:
        return names[delta]
    return f"{-delta}日前" if delta < 0 else f"{delta}日後"


def moment_prompt(moment: Moment, today: date) -> list[ChatMessage]:
    facts = "\n".join(f"- {f}" for f in moment.facts)
    block = (f'<moment kind="{moment.kind.value}" when="{relative_day(moment.about, today)}"'
             f' topic="{moment.topic}">\n{facts}\n</moment>')
    return [ChatMessage("system", _INSTRUCTION.format(limit=MAX_CHARS // 2) + "\n" + block),
            ChatMessage("user", "（ロボットから話しかける）")]


def plain_line(moment: Moment, today: date) -> str:
    """The line said when no chat model wrote one."""
    when, topic = relative_day(moment.about, today), moment.topic
    return {
        MomentKind.DAY_BEFORE: f"{when}は{topic}だね。気をつけて行ってきてね。",
        MomentKind.MORNING_OF: f"{when}は{topic}だね。楽しんできてね。",
        MomentKind.FOLLOW_UP: f"{topic}、どうだった？",
        MomentKind.BIRTHDAY: f"{when}は{topic}の誕生日だね。",
        MomentKind.REMINDER: f"{topic}時間だよ。",
    }[moment.kind]


async def write_line(chat: ChatModel | None, moment: Moment, today: date) -> str:
    """The moment's line: the chat model's (its face tag removed), else :func:`plain_line`."""
    if chat is not None:
        try:
            text = await chat.complete(moment_prompt(moment, today))
            text = parse_emotion(text).text.strip()
            if text:
                return text[:MAX_CHARS]
        except Exception as exc:  # noqa: BLE001 - the plain line is said instead
            log.warning("the chat model could not write moment %s: %s", moment.key, exc)
    return plain_line(moment, today)
