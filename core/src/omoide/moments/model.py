"""What a moment is: a person, a kind, a window, the memories it comes from."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any


class MomentKind(enum.StrEnum):
    DAY_BEFORE = "day_before"
    MORNING_OF = "morning_of"
    FOLLOW_UP = "follow_up"
    BIRTHDAY = "birthday"
    REMINDER = "reminder"


REPEATING = frozenset({MomentKind.BIRTHDAY, MomentKind.REMINDER})
"""Kinds that come back (a reminder every day, a birthday every year): each comes with
its day or year in its key, and can be stopped for good (:attr:`Moment.series`)."""

CONVERSATION_ONLY = frozenset({MomentKind.FOLLOW_UP})
"""Kinds said only when the person talks (「箱根どうだった？」 the first time they speak
after the plan), never pushed to an idle robot."""


@dataclass(frozen=True)
class Moment:
    """One thing to say to ``person`` between ``starts`` and ``ends`` (aware datetimes).

    ``key`` is unique per memory and kind (and per day for a daily reminder, per year
    for a birthday): the ledger never lets one key be said twice. ``reasons`` are the
    memory ids it comes from; ``about`` the day it speaks of; ``topic`` the few words
    the line is about (「箱根」); ``facts`` the memories' texts for the chat model.
    """

    key: str
    person: str
    kind: MomentKind
    starts: datetime
    ends: datetime
    about: date
    topic: str
    reasons: tuple[str, ...]
    facts: tuple[str, ...]

    def open_at(self, now: datetime) -> bool:
        return self.starts <= now < self.ends

    @property
    def series(self) -> str:
        """The key every repetition of this moment shares (a daily reminder's, a
        birthday's every year): cancelled, none of them is said again. A one-off
        moment's is its own key."""
        return self.key.rsplit(":", 1)[0] if self.kind in REPEATING else self.key

    @property
    def pushable(self) -> bool:
        """May be spoken to an idle robot (not only at the start of a conversation)."""
        return self.kind not in CONVERSATION_ONLY

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "person": self.person, "kind": self.kind.value,
                "starts": self.starts.isoformat(), "ends": self.ends.isoformat(),
                "about": self.about.isoformat(), "topic": self.topic,
                "reasons": list(self.reasons), "facts": list(self.facts),
                "repeats": self.kind in REPEATING}
