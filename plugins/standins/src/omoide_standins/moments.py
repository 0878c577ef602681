"""The stand-in's rule per moment kind: a line a person hears when omoide speaks first.

The core's prompt carries ``<moment kind=".." when=".." topic="..">`` (see
``omoide.moments.writing``); one fixed line per kind, with the day and the topic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from omoide.api import ChatMessage

_MOMENT = re.compile(r'<moment kind="([a-z_]+)" when="([^"]*)" topic="([^"]*)">')


def moment_line(messages: Sequence[ChatMessage]) -> str | None:
    """The line for a moment prompt, or None when the messages are not one."""
    system = next((m.content for m in messages if m.role == "system"), "")
    m = _MOMENT.search(system)
    if m is None:
        return None
    kind, when, topic = m.groups()
    lines = {
        "day_before": f"{when}は{topic}だね。気をつけて行ってきてね。",
        "morning_of": f"{when}は{topic}だね。楽しんできてね。",
        "follow_up": f"{topic}、どうだった？",
        "birthday": f"{when}は{topic}の誕生日だね。何か用意した？",
        "reminder": f"そろそろ{topic}時間だよ。",
    }
    return lines.get(kind)
