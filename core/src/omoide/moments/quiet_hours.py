"""Quiet hours: a daily span of local time (default 22:00-07:00) when omoide never
speaks first. A span whose end is before its start runs past midnight."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time

_SPAN = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


@dataclass(frozen=True)
class QuietHours:
    start: time
    end: time

    @classmethod
    def parse(cls, text: str) -> QuietHours:
        """``"22:00-07:00"`` -> QuietHours; ValueError for anything else."""
        m = _SPAN.match(text)
        if m is None:
            raise ValueError(f"quiet hours must look like 22:00-07:00, not {text!r}")
        h1, m1, h2, m2 = (int(g) for g in m.groups())
        return cls(time(h1, m1), time(h2, m2))

    def contains(self, local: datetime) -> bool:
        """Whether ``local`` (a datetime in the household's zone) is quiet."""
        t = local.timetz().replace(tzinfo=None)
        if self.start == self.end:
            return False
        if self.start < self.end:
            return self.start <= t < self.end
        return t >= self.start or t < self.end

    def __str__(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M}"
