"""Extraction: a conversation log in, short facts about the user out.

The chat model gets the reference's rules and the conversation in a fixed format
(other components, such as the offline stand-in chat, rely on it exactly)::

    <conversation>
    [2026-09-27 20:50 (日)] user: 来週の土曜日に友達と箱根に行くんだ
    [2026-09-27 20:50 (日)] assistant: いいね！楽しんできてね。
    </conversation>

and answers JSON ``{"facts": [{"text": "あなたは…", "kind": "plan", "profile": false,
"category": null, "entities": ["箱根"]}]}``. The profile decision (and its category) is
kept in the fact's kind (:func:`omoide.memory.profile.stored_kind`: ``profile:health``);
when the model does not say, the kind stays as it is and the deterministic classifier
decides when the memory is read.
:func:`parse_facts` accepts that, a bare list, code fences and stray text around
the JSON; anything else raises :class:`ExtractionFormatError` so the caller retries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from omoide.memory.dates import format_stamp
from omoide.memory.profile import stored_kind
from omoide.types import ChatMessage, Exchange

KINDS = ("plan", "event", "preference", "habit", "person", "profile", "other")
MAX_OUTPUT_CHARS = 20_000
MAX_FACT_CHARS = 200
MAX_FACTS = 30

SYSTEM_PROMPT = """あなたは会話ログから「ユーザー本人についての事実」だけを抜き出す記録係です。
会話は <conversation> と </conversation> の間にあり、各行の先頭の [日時 (曜日)] がその発言の日時です。

規則:
- 記録するのはユーザー本人のこと（好み、習慣、予定、出来事、家族や友人など本人に関わる人、プロフィール）だけ。
- アシスタントの発言内容、一般常識、天気やニュース、センサーの値、あいさつや雑談の決まり文句は記録しない。
- 1つの事実は1文、おおむね30〜60文字。主語は必ず「あなた」（「ユーザー」とは書かない）。
- 相対的な日付（明日、来週の土曜日、今度の金曜日など）は言われた通りに残し、その発言の日時から計算した絶対日付を全角括弧で添える。例: 「あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。」
- 予定の変更や中止は、変更後の内容が分かる1文にする（例: 「あなたは箱根行きを来週の日曜日（2026年10月4日）に変えた。」）。
- 会話から分からないことは推測しない。記録することがなければ空のリストを返す。
- 各事実について、その人を長く表す事実（プロフィール）かどうかを "profile" に true/false で書く。プロフィールは、健康・アレルギー・食事の制限、家族とその名前や誕生日、ペット、住まい、仕事や学校、はっきりした好き嫌い、続けている習慣。日付のある予定や出来事、一度きりのことは必ず false。
- プロフィールなら "category" に health（健康・アレルギー）、family（家族）、pet（ペット）、basics（住まい・年齢など）、work（仕事・学校）、like（好き嫌い）、habit（習慣）、person（周りの人）のどれかを書く。以前のプロフィールが変わったとき（引っ越し、転職など）は、変わった後の事実を1文で書く。

出力は次のJSONだけ:
{"facts": [{"text": "あなたは…", "kind": "plan|event|preference|habit|person|profile|other", "profile": false, "category": null, "entities": ["固有名詞", "…"]}]}"""


class ExtractionFormatError(ValueError):
    """The chat model's answer could not be read as facts."""


@dataclass(frozen=True)
class Fact:
    text: str
    kind: str
    entities: tuple[str, ...]


def conversation_block(exchanges: Sequence[Exchange], timezone: str) -> str:
    """The fixed ``<conversation>`` block (timestamps in the user's time zone)."""
    tz = ZoneInfo(timezone)
    lines = ["<conversation>"]
    for ex in exchanges:
        stamp = format_stamp(ex.at.astimezone(tz))
        lines.append(f"[{stamp}] user: {_one_line(ex.user_text)}")
        if ex.assistant_text:
            lines.append(f"[{stamp}] assistant: {_one_line(ex.assistant_text)}")
    lines.append("</conversation>")
    return "\n".join(lines)


def _one_line(text: str) -> str:
    # A line break or a tag inside an utterance must not fake another line or end the block.
    text = re.sub(r"\s+", " ", text).strip()
    return text.replace("<", "＜").replace(">", "＞")


def build_messages(exchanges: Sequence[Exchange], timezone: str) -> list[ChatMessage]:
    return [ChatMessage("system", SYSTEM_PROMPT),
            ChatMessage("user", "次の会話から、ユーザー本人についての事実を抜き出してください。\n"
                        + conversation_block(exchanges, timezone))]


def _json_candidates(raw: str) -> list[str]:
    fenced = re.findall(r"```(?:json|JSON)?\s*(.*?)```", raw, re.S)
    out = [f.strip() for f in fenced]
    out.append(raw.strip())
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = raw.find(opener), raw.rfind(closer)
        if 0 <= start < end:
            out.append(raw[start:end + 1])
    return out


def parse_facts(raw: str) -> list[Fact]:
    """Facts from the model's answer; raises :class:`ExtractionFormatError` if unreadable.

    An empty list is a valid answer (nothing worth remembering).
    """
    if not raw or not raw.strip():
        raise ExtractionFormatError("empty answer")
    if len(raw) > MAX_OUTPUT_CHARS:
        raise ExtractionFormatError(f"answer of {len(raw)} characters is too long")
    data: object = None
    for candidate in _json_candidates(raw):
        try:
            data = json.loads(candidate)
            break
        except json.JSONDecodeError:
            continue
    else:
        raise ExtractionFormatError(f"not JSON: {raw[:80]!r}")
    if isinstance(data, dict):
        items = data.get("facts", data.get("memories"))
        if items is None and "text" in data:
            items = [data]
    else:
        items = data
    if not isinstance(items, list):
        raise ExtractionFormatError("no list of facts in the answer")
    if len(items) > MAX_FACTS:
        raise ExtractionFormatError(f"{len(items)} facts is more than {MAX_FACTS}")
    facts: list[Fact] = []
    for item in items:
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict):
            raise ExtractionFormatError(f"a fact is neither text nor an object: {item!r}")
        text = str(item.get("text") or item.get("fact") or "").strip()
        if not text:
            continue
        if len(text) > MAX_FACT_CHARS:
            raise ExtractionFormatError(f"a fact of {len(text)} characters is too long")
        text = text.replace("ユーザー", "あなた")
        kind = str(item.get("kind") or "other").strip().lower()
        kind = kind if kind in KINDS else "other"
        entities = item.get("entities") or []
        if not isinstance(entities, list):
            entities = [entities]
        category = item.get("category")
        kind = stored_kind(kind, _flag(item.get("profile")),
                           str(category).strip().lower() if category else None)
        facts.append(Fact(text, kind, tuple(str(e).strip() for e in entities if str(e).strip())))
    return facts


def _flag(value: object) -> bool | None:
    """The model's profile decision: true/false (also as text); None when it did not say."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    return None
