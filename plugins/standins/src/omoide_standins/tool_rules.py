"""Tool calls of the chat stand-in: a few Japanese rules, so tools work end to end offline.

Only functions the turn actually offers are called (by the names the skills plugin
uses). The rules, on the person's last utterance:

- 「…覚えておいて」 → ``remember`` (the fact from the same sentence, else from what the
  person said just before, turned into 「あなたは…」 by the stand-in's extraction rules);
- 「〜のことは忘れて」 → ``forget_memory`` (omoide then asks the person to confirm);
- 「私について何を覚えてる？」 → ``what_you_know_about_me``;
- 「3分タイマー」 → ``set_timer``; 「タイマー止めて」 → ``cancel_timer``;
  「タイマーある？」 → ``list_timers``; 「明日7時に起こして」 → ``set_alarm``;
- 「明日の天気は？」 → ``weather``; 「今何時？」 → ``current_time``;
- 「リビングの電気つけて」 → ``ha_list_entities`` then ``ha_call_service``.

After a tool result the stand-in says the result's ``message`` (the skills put a
speakable sentence there), a refusal as it was given, or that it did not work.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from omoide.api import (
    FIRST_PERSON_PRONOUNS,
    ChatMessage,
    Emotion,
    ToolCall,
    ToolSpec,
    regex_alternation,
)

FactFinder = Callable[[str], list[str]]
"""Turns an utterance into 「あなたは…」 facts (the stand-in's extraction rules)."""

_KANJI_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6,
                 "七": 7, "八": 8, "九": 9}


def kanji_number(text: str) -> int | None:
    """三 → 3, 十五 → 15, 二十 → 20, 百二十 → 120; digits pass through."""
    if text.isdigit():
        return int(text)
    total, current = 0, 0
    for ch in text:
        if ch in _KANJI_DIGITS:
            current = _KANJI_DIGITS[ch]
        elif ch == "十":
            total += (current or 1) * 10
            current = 0
        elif ch == "百":
            total += (current or 1) * 100
            current = 0
        else:
            return None
    return total + current


_NUM = r"([0-9]+(?:\.[0-9]+)?|[〇零一二三四五六七八九十百]+)"
_DURATION = re.compile(_NUM + r"\s*(時間|分|秒)(半)?")
_ALARM = re.compile(r"(今日|きょう|明日|あした|明後日|あさって)?の?\s*(午前|午後|朝|夜)?\s*"
                    + _NUM + r"\s*時\s*(?:(半)|" + _NUM + r"\s*分)?")
_DAYS = {"今日": 0, "きょう": 0, "明日": 1, "あした": 1, "明後日": 2, "あさって": 2}


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float(kanji_number(text) or 0)


def timer_arguments(said: str) -> dict[str, Any] | None:
    """「3分タイマー」 → {"minutes": 3}; None when no duration is named."""
    found: dict[str, float] = {}
    for value, unit, half in _DURATION.findall(said):
        key = {"時間": "hours", "分": "minutes", "秒": "seconds"}[unit]
        found[key] = found.get(key, 0) + _number(value) + (0.5 if half else 0)
    if not found:
        return None
    return {k: (int(v) if v == int(v) else v) for k, v in found.items()}


def alarm_arguments(said: str) -> dict[str, Any] | None:
    """「明日7時に起こして」 → {"time": "07:00", "days_from_today": 1}."""
    m = _ALARM.search(said)
    if m is None:
        return None
    day, part, hour_text, half, minute_text = m.groups()
    hour = int(_number(hour_text))
    minute = 30 if half else int(_number(minute_text)) if minute_text else 0
    if part in ("午後", "夜") and hour < 12:
        hour += 12
    args: dict[str, Any] = {"time": f"{hour:02d}:{minute:02d}"}
    if day:
        args["days_from_today"] = _DAYS[day]
    return args


def _forget_subject(said: str) -> str:
    m = re.search(r"(.+?)(?:のこと|の話|って話)?(?:は|を|も)?、?忘れて", said)
    subject = m.group(1) if m else said
    subject = re.sub(r"^(?:ねえ|あの|えっと|やっぱり)[、,]?", "", subject)
    return subject.strip("、,。 ") or said


_ABOUT_ME = re.compile(regex_alternation(FIRST_PERSON_PRONOUNS) + r"(?:について|のこと|の事).*"
                       r"(?:覚えて|知って|おぼえて)")
_REMEMBER = re.compile(r"(?:覚えて(?:おいて|おいてね|おいてほしい|て|てね)|覚えといて|"
                       r"おぼえておいて|記憶して)")


def _remember_fact(said: str, previous: str | None, facts: FactFinder) -> str:
    head = _REMEMBER.split(said)[0]
    head = re.sub(r"(?:それ|これ|そのこと)(?:を|は)?[、,]?$", "", head)
    head = re.sub(r"(?:って|と|ことを|のを|を)$", "", head.strip("、,。 "))
    source = head if len(head) >= 4 else (previous or "")
    if not source:
        return ""
    found = facts(source)
    if found:
        return found[0]
    return f"あなたは「{source}」と話していた。"


class _Calls:
    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self.offered = {t.name for t in tools}
        self.count = 0

    def make(self, name: str, arguments: dict[str, Any]) -> ToolCall | None:
        if name not in self.offered:
            return None
        return ToolCall(f"standin-{name}", name, json.dumps(arguments, ensure_ascii=False))


def tool_call_for(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                  facts: FactFinder) -> ToolCall | None:
    """The tool the stand-in calls for this turn, or None to answer in words."""
    if not tools or not messages:
        return None
    calls = _Calls(tools)
    last = messages[-1]
    users = [m.content for m in messages if m.role == "user"]
    said = unicodedata.normalize("NFKC", users[-1]).strip() if users else ""
    if last.role == "tool":
        return _follow_up(messages, said, calls)
    if last.role != "user":
        return None
    previous = unicodedata.normalize("NFKC", users[-2]).strip() if len(users) > 1 else None

    if _ABOUT_ME.search(said):
        return calls.make("what_you_know_about_me", {})
    if "忘れて" in said and "忘れないで" not in said:
        return calls.make("forget_memory", {"about": _forget_subject(said)})
    if _REMEMBER.search(said):
        fact = _remember_fact(said, previous, facts)
        return calls.make("remember", {"fact": fact}) if fact else None
    if "タイマー" in said:
        if re.search(r"(?:止め|とめ|消し|けし|キャンセル|取り消|やめ)", said):
            return calls.make("cancel_timer", {"all": True})
        args = timer_arguments(said)
        if args is not None:
            return calls.make("set_timer", args)
        return calls.make("list_timers", {})
    if re.search(r"(?:起こして|おこして|アラーム|目覚まし)", said):
        args = alarm_arguments(said)
        if args is not None:
            return calls.make("set_alarm", args)
    if re.search(r"(?:天気|傘|雨降る|雨ふる)", said):
        day = ("day_after_tomorrow" if re.search(r"明後日|あさって", said)
               else "tomorrow" if re.search(r"明日|あした", said) else "today")
        return calls.make("weather", {"day": day})
    if re.search(r"(?:何時|なんじ|何日|なんにち|何曜日|なんようび)", said):
        return calls.make("current_time", {})
    if re.search(r"(?:電気|ライト|照明)", said) and re.search(r"(?:つけて|消して|けして)", said):
        return calls.make("ha_list_entities", {"domain": "light"})
    return None


def _follow_up(messages: Sequence[ChatMessage], said: str, calls: _Calls) -> ToolCall | None:
    """A second call after a first one's result (the light: list, then switch)."""
    calling = _calling(messages)
    if calling is None or calling.name != "ha_list_entities":
        return None
    result = _json(messages[-1].content)
    entities = result.get("entities") if isinstance(result, dict) else None
    if not isinstance(entities, list) or not entities:
        return None
    chosen = next((e for e in entities if isinstance(e, dict)
                   and str(e.get("name", "")) and str(e.get("name")) in said), entities[0])
    service = "turn_off" if re.search(r"(?:消して|けして)", said) else "turn_on"
    return calls.make("ha_call_service", {"domain": "light", "service": service,
                                          "entity_id": chosen.get("entity_id")})


def _calling(messages: Sequence[ChatMessage]) -> ToolCall | None:
    tool_id = messages[-1].tool_call_id
    for m in reversed(messages):
        for call in m.tool_calls:
            if call.id == tool_id:
                return call
    return None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def reply_after_tool(messages: Sequence[ChatMessage]) -> str:
    """What the stand-in says once a tool answered: its message, a refusal, or sorry."""
    result = _json(messages[-1].content)
    if isinstance(result, dict):
        if "error" in result:
            error = str(result["error"])
            if _JAPANESE.search(error):
                return f"[{Emotion.SAD.value}] {error}"
            return (f"[{Emotion.SAD.value}] ごめんね、うまくいかなかったみたい。"
                    "もう一度言ってくれる？")
        if result.get("status") == "needs_confirmation":
            return f"[{Emotion.THINKING.value}] {result.get('question')}"
        if result.get("status") == "cancelled":
            return f"[{Emotion.NEUTRAL.value}] {result.get('message') or 'やめておくね。'}"
        if result.get("message"):
            return f"[{Emotion.HAPPY.value}] {result['message']}"
        result = json.dumps(result, ensure_ascii=False)
    text = str(result).strip()
    return f"[{Emotion.HAPPY.value}] 調べたよ。{text[:120]}" if text else \
        f"[{Emotion.NEUTRAL.value}] 終わったよ。"
