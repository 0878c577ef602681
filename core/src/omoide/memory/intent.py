"""Does an utterance ask about the user's own life? And what kind of answer does it want?

The robust engine injects memories only when the user refers to something they
told the assistant before (「覚えてる」「〜だっけ」「〜かしら」), to their plans
(予定, 約束) or to themselves (私の, 俺の...). General questions (「石垣島って何が有名なの」)
and requests (「明日7時に起こして」) get no memory even when a memory shares a word
with them, and so do questions about an attribute of the world asked with 〜だっけ
(「TOEICって何点満点だっけ」) unless they also point at the user: the reference's
rule "don't bring memories up unasked", enforced before the prompt instead of hoped
for inside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RECALL = re.compile(
    r"っけ|覚えて|おぼえて|憶えて|忘れ(?:た|ちゃ)|(?:た|だ|でした)(?:かしら|かな)|言って(?:た|まし|なかっ)|話し(?:た|てた)"
    r"|教えた|伝えた|約束|予定|用事|スケジュール|だったかな|んだったか|でしたか|だよね|たよね|んだよね"
    r"|何(?:する|した|やる|やった|買った|あげた|作った)(?:ん|の)だ|前に(?:言|話)"
    r"|(?:私|わたし|あたし|俺|おれ|僕|ぼく|うち|自分)(?:の|が|って|は|に|と|も)")
_RECALL_EN = re.compile(
    r"^(?:when|what|where|who|whom|which|why|how|did|does|do|is|was|are|were|would|could|"
    r"has|have)\b|\b(?:remember|recall|did i|my|i told|i said|we talked)\b", re.I)
_CALENDAR = re.compile(r"何曜|何日|なんにち|なんようび|何月")
# Questions about an attribute of the world (a test's full marks, a mountain's height)
# are general knowledge even with 〜だっけ; only an explicit reference to the user or
# to what they said (_SELF) makes them about the user again.
_WORLD_FACT = re.compile(r"満点|標高|人口|首都|面積|語源|読み方|何メートル|何キロ|何センチ|"
                         r"世界一|日本一|一番(?:高|大き|長|深|広|古)")
_SELF = re.compile(
    r"(?:私|わたし|あたし|俺|おれ|僕|ぼく|うち|自分)(?:の|が|って|は|に|と|も)|覚えて|おぼえて|"
    r"憶えて|言って(?:た|まし|なかっ)|話し(?:た|てた)|教えた|伝えた|約束|予定|用事|前に(?:言|話)")


@dataclass(frozen=True)
class Intent:
    """``recall``: the utterance refers to the user's own memories.
    ``calendar``: it asks what day something is (「今日って何曜日」) — its own date
    words are the subject, not a date to look memories up by.
    ``asks_when``: it asks for a date or time, so dated memories answer it better.
    """

    recall: bool
    calendar: bool
    asks_when: bool


def detect(text: str) -> Intent:
    """Classify a canonical utterance (see :func:`omoide.memory.text.canonical`)."""
    recall = bool(_RECALL.search(text) or _RECALL_EN.search(text))
    if recall and _WORLD_FACT.search(text) and not _SELF.search(text):
        recall = False
    return Intent(recall=recall,
                  calendar=bool(_CALENDAR.search(text)),
                  asks_when=bool(re.search(r"いつ|何時|何日|何曜|なんじ|^when\b", text, re.I)))
