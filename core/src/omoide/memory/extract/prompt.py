"""Extraction: a conversation log in, short facts about the user out.

The chat model gets the reference's rules and the conversation in a fixed format
(other components, such as the offline stand-in chat, rely on it exactly)::

    <conversation>
    [2026-09-27 20:50 (日)] user: 来週の土曜日に友達と箱根に行くんだ
    [2026-09-27 20:50 (日)] assistant: いいね！楽しんできてね。
    </conversation>

and answers JSON ``{"facts": [{"text": "あなたは…", "kind": "plan", "profile": false,
"category": null, "replaces": null, "entities": ["箱根"]}]}``. The prompt asks for
statements about the person only (no questions, requests or greetings, judged by the
sentence's form since a recogniser drops 「？」), and for ``replaces`` (what an update
replaced, :attr:`omoide.components.extractor.Fact.replaces`) on a fact that changes an
earlier one. The profile decision (and its category) is
kept in the fact's kind (:func:`omoide.memory.facts.profile.stored_kind`: ``profile_health``);
when the model does not say, the kind stays as it is and the deterministic classifier
decides when the memory is read.
:func:`parse_facts` accepts that, a bare list, code fences, stray text around the JSON
and the slips models make (trailing commas, single quotes, a missing closing bracket:
repaired with ``json-repair``); anything else — including an answer cut off inside a
fact — raises :class:`ExtractionFormatError` so the caller retries or isolates the
exchange. A statement longer than ``max_statement_chars`` is cut in the prompt, so one
long monologue cannot make the answer unbounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import timedelta
from zoneinfo import ZoneInfo

import json_repair

from omoide.components.extractor import (
    FACT_KINDS,
    MAX_FACT_CHARS,
    MAX_FACTS,
    ExtractionFormatError,
    Fact,
    TooManyFacts,
)
from omoide.memory.facts.profile import stored_kind
from omoide.memory.language.absolute_dates import format_stamp
from omoide.memory.language.block_text import escape_block_text
from omoide.types import ChatMessage, Exchange

__all__ = ["MAX_FACTS", "MAX_FACT_CHARS", "ExtractionFormatError", "Fact", "TooManyFacts",
           "build_messages", "conversation_block", "one_line", "parse_facts",
           "unextractable"]

KINDS = FACT_KINDS
MAX_OUTPUT_CHARS = 20_000
CUT_MARK = "…"
# Relative dates reach about a year ahead or back of when something was said.
_DATE_REACH = timedelta(days=400)

SYSTEM_PROMPT = """あなたは会話ログから「ユーザー本人についての事実」だけを抜き出す記録係です。
会話は <conversation> と </conversation> の間にあり、各行の先頭の [日時 (曜日)] がその発言の日時です。

規則:
- 記録するのはユーザー本人のこと（好み、習慣、予定、出来事、家族や友人など本人に関わる人、プロフィール）だけ。
- アシスタントの発言内容、一般常識、天気やニュース、センサーの値、あいさつや雑談の決まり文句は記録しない。
- ユーザーの質問、アシスタントへの依頼、あいさつ、相づちは事実ではないので記録しない。音声認識の文には「？」が付かないことが多いので、文の形で判断する: 「か」「かな」「の」「っけ」で終わる文、「何」「いつ」「どこ」「誰」「どう」などで尋ねる文、「〜ある」「〜わかる」「〜知ってる」で相手に尋ねる文は質問（例: 「近くにいいカフェある」「明日って雨降るの」は記録しない）。「〜して」「〜してください」「〜してくれる」「〜してほしい」、タイマーやアラームの設定は依頼。「おはよう」「ありがとう」「おやすみ」だけの文はあいさつ。あいさつや相づちの後に本人のことが続くときは、その部分だけを記録する。
- 1つの事実は1文、おおむね30〜60文字。主語は必ず「あなた」（「ユーザー」とは書かない）。
- 相対的な日付（明日、来週の土曜日、今度の金曜日など）は言われた通りに残し、その発言の日時から計算した絶対日付を全角括弧で添える。例: 「あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。」
- 予定の変更や中止は、変更後の内容が分かる1文にする（例: 「あなたは箱根行きを来週の日曜日（2026年10月4日）に変えた。」）。
- 会話から分からないことは推測しない。記録することがなければ空のリストを返す。
- 各事実について、その人を長く表す事実（プロフィール）かどうかを "profile" に true/false で書く。プロフィールは、健康・アレルギー・食事の制限、家族とその名前や誕生日、ペット、住まい、仕事や学校、はっきりした好き嫌い、続けている習慣。日付のある予定や出来事、一度きりのことは必ず false。
- プロフィールなら "category" に health（健康・アレルギー）、family（家族）、pet（ペット）、basics（住まい・年齢など）、work（仕事・学校）、like（好き嫌い）、habit（習慣）、person（周りの人）のどれかを書く。以前のプロフィールが変わったとき（引っ越し、転職など）は、変わった後の事実を1文で書く。
- 以前の事実を置き換える事実（引っ越し、転職、やめた習慣や始めた習慣、変わった好み、飲む薬の変更、予定の変更や中止）は、文の中で何から何に変わったかを書き、"replaces" に変わる前の内容を短く書く（例: 「あなたはコーヒーをやめて紅茶を飲むようになった。」の "replaces" は "コーヒーを飲む習慣"、予定の日付が変わったなら "箱根旅行の日程"）。何も置き換えない事実は null。

出力は次のJSONだけ:
{"facts": [{"text": "あなたは…", "kind": "plan|event|preference|habit|person|profile|other", "profile": false, "category": null, "replaces": null, "entities": ["固有名詞", "…"]}]}"""


def conversation_block(exchanges: Sequence[Exchange], timezone: str,
                       max_statement_chars: int | None = None) -> str:
    """The fixed ``<conversation>`` block (timestamps in the user's time zone); each
    statement is cut to ``max_statement_chars`` (ending in …) when given. An exchange
    with nothing heard (the robot spoke first: a moment) is the assistant's line alone."""
    tz = ZoneInfo(timezone)
    lines = ["<conversation>"]
    for ex in exchanges:
        stamp = format_stamp(ex.at.astimezone(tz))
        if ex.user_text:
            lines.append(f"[{stamp}] user: {one_line(ex.user_text, max_statement_chars)}")
        if ex.assistant_text:
            lines.append(f"[{stamp}] assistant:"
                         f" {one_line(ex.assistant_text, max_statement_chars)}")
    lines.append("</conversation>")
    return "\n".join(lines)


_CONVERSATION_TAG = re.compile(r"/?\s*conversation")


def one_line(text: str, max_chars: int | None = None) -> str:
    """An utterance as one line of the block, cut to ``max_chars``: a line break, an
    angle bracket or the block's tag name in any width inside what someone said can
    neither fake another line nor end the block (:mod:`omoide.memory.language.block_text`)."""
    text = re.sub(r"\s+", " ", escape_block_text(text, _CONVERSATION_TAG, "(会話)"))
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars - len(CUT_MARK)] + CUT_MARK
    return text


def build_messages(exchanges: Sequence[Exchange], timezone: str,
                   max_statement_chars: int | None = None) -> list[ChatMessage]:
    return [ChatMessage("system", SYSTEM_PROMPT),
            ChatMessage("user", "次の会話から、ユーザー本人についての事実を抜き出してください。\n"
                        + conversation_block(exchanges, timezone, max_statement_chars))]


def unextractable(exchange: Exchange, timezone: str) -> str | None:
    """Why ``exchange`` can never be extracted (None if it can): its time must have a
    place in the calendar in the user's zone, with room for the relative dates that
    resolve against it (9999-12-31 has none)."""
    try:
        local = exchange.at.astimezone(ZoneInfo(timezone))
        format_stamp(local)
        day = local.date()
        _ = (day + _DATE_REACH, day - _DATE_REACH)
    except (OverflowError, ValueError) as exc:
        return (f"its time {exchange.at.isoformat()} is outside the calendar extraction can"
                f" work with ({type(exc).__name__}: {exc})")
    return None


def _read_json(raw: str) -> object:
    """The JSON in ``raw`` (code fences and stray text around it are fine), repaired with
    ``json-repair`` when the model slipped. A repaired answer must name or hold a fact
    list, and may not end inside its last fact (an answer cut off mid-way)."""
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        repaired = json_repair.loads(raw)
    except (RecursionError, ValueError) as exc:
        raise ExtractionFormatError(f"not JSON: {raw[:80]!r}") from exc
    items = _fact_items(repaired)
    # json-repair reads anything as something ("{{{" as []): only a fact list counts
    if not isinstance(items, list) or (not items and not re.search(r"facts|\[\s*\]", raw)):
        raise ExtractionFormatError(f"not JSON: {raw[:80]!r}")
    last = items[-1] if items else None
    text = last.get("text") if isinstance(last, dict) else last
    if isinstance(text, str) and text.strip():
        at = raw.rfind(text.strip())
        if at >= 0 and not re.match(r"\s*[\"']", raw[at + len(text.strip()):]):
            raise ExtractionFormatError(f"the answer ends inside a fact: {text[:40]!r}")
    return repaired


def _fact_items(data: object) -> object:
    if isinstance(data, dict):
        items = data.get("facts", data.get("memories"))
        if items is None and "text" in data:
            items = [data]
        return items
    return data


def parse_facts(raw: str) -> list[Fact]:
    """Facts from the model's answer; raises :class:`ExtractionFormatError` if unreadable.

    An empty list is a valid answer (nothing worth remembering).
    """
    if not raw or not raw.strip():
        raise ExtractionFormatError("empty answer")
    if len(raw) > MAX_OUTPUT_CHARS:
        raise ExtractionFormatError(f"answer of {len(raw)} characters is too long")
    items = _fact_items(_read_json(raw))
    if not isinstance(items, list):
        raise ExtractionFormatError("no list of facts in the answer")
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
        facts.append(Fact(text, kind, tuple(str(e).strip() for e in entities if str(e).strip()),
                          _replaces(item.get("replaces"))))
    if len(facts) > MAX_FACTS:
        raise TooManyFacts(facts)
    return facts


def _replaces(value: object) -> str | None:
    """What the fact says it replaces (:attr:`Fact.replaces`): text, cut to
    :data:`MAX_FACT_CHARS`; None when the model wrote nothing, null or something else."""
    if not isinstance(value, str) or value.strip().lower() in ("", "null", "none"):
        return None
    return value.strip()[:MAX_FACT_CHARS]


def _flag(value: object) -> bool | None:
    """The model's profile decision: true/false (also as text); None when it did not say."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    return None
