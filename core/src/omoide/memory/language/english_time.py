"""English words that place what a sentence tells in time: "yesterday", "last week", "two
days ago", "this morning", "on Saturday".

A when-question is answered better by the memory that dates its event than by the later
ones that mention it again ("I went to a support group yesterday" against "the support group
has helped me"); Japanese memories are dated by :mod:`omoide.memory.language.temporal`,
English ones (people talk to omoide in English too, and LoCoMo's conversations are English)
by :func:`tells_when`.
"""

from __future__ import annotations

import re

_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_MONTH = (r"(?:january|february|march|april|may|june|july|august|september|october|"
          r"november|december)")
_PERIOD = (r"(?:night|morning|afternoon|evening|week|weekend|month|year|summer|winter|spring|"
           r"fall|autumn)")
_COUNT = (r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|a few|couple of|"
          r"several|\d+)")
_WHEN = re.compile(
    rf"\b(?:yesterday|today|tonight|the other day|"
    rf"(?:last|this|next|this past) (?:{_PERIOD}|{_DAY})|"
    rf"{_COUNT} (?:days?|weeks?|months?|years?) ago|"
    rf"(?:on|last|next) {_DAY}|in {_MONTH}|since {_MONTH}|"
    rf"(?:earlier|later) (?:today|this week|this month))\b", re.IGNORECASE)


def tells_when(text: str) -> bool:
    """Whether English ``text`` places something in time (a relative day or period)."""
    return bool(_WHEN.search(text))
