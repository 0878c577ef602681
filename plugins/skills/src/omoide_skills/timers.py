"""The ``timers`` tool: 「3分タイマー」「明日7時に起こして」, listed and cancelled by voice.

Timers live in the plugin's data folder (``timers.json``) and survive restarts; with a
shared database (``database.url``) they live there instead, seen by every worker and
each announced by one (:mod:`omoide_skills.shared_timer_book`); a worker's timers file
from before moves in at its first start. When
one goes off omoide says so on the person's robot through the server's announcer, or
queues the message until the robot is back. A time in the past, or further ahead than
``max_days``, is refused with a sentence the model can say.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from pydantic import Field

from omoide.api import Emotion, Tool, ToolContext, ToolError, ToolFunction
from omoide_skills.timer_book import Timer, TimerBook, TimerStorage
from omoide_skills.user_zones import ZonedToolConfig, zone_for


class TimersConfig(ZonedToolConfig):
    max_days: float = Field(366.0, gt=0, le=3660,
                            description="Furthest ahead a timer or alarm may be set, in days.")
    max_per_user: int = Field(20, ge=1, le=500, description="Pending timers per person.")
    file: str = Field("timers.json",
                      description="File in the plugin's data folder that keeps the timers.")
    poll_seconds: float = Field(
        5.0, gt=0, le=300,
        description="With database.url: how often a worker looks for timers set on other"
                    " workers (or left by a worker that died) that fall due.")
    handoff_seconds: float = Field(
        10.0, ge=0, le=3600,
        description="With database.url: how long after a timer falls due a worker that"
                    " does not reach the person's robot waits for the one that does.")
    lease_seconds: float = Field(
        60.0, gt=0, le=3600,
        description="With database.url: how long a worker going off with a timer holds it;"
                    " if it dies meanwhile, another worker announces it after this.")


SET_TIMER = ToolFunction(
    "set_timer",
    "タイマーをセットする（「3分タイマー」「1時間半たったら教えて」）。時間が来たらロボットが知らせる。",
    {"type": "object", "properties": {
        "hours": {"type": "number", "minimum": 0, "description": "時間"},
        "minutes": {"type": "number", "minimum": 0, "description": "分"},
        "seconds": {"type": "number", "minimum": 0, "description": "秒"},
        "label": {"type": "string", "description": "何のタイマーか（任意、例: パスタ）"}}})
SET_ALARM = ToolFunction(
    "set_alarm",
    "決まった時刻にアラームをセットする（「明日7時に起こして」）。相手の地域の時刻で指定する。",
    {"type": "object", "properties": {
        "time": {"type": "string", "description": "時刻 HH:MM（24時間制）"},
        "days_from_today": {"type": "integer", "minimum": 0,
                            "description": "今日なら0、明日なら1（dateと一緒には使わない）"},
        "date": {"type": "string", "description": "日付 YYYY-MM-DD（任意）"},
        "label": {"type": "string", "description": "何のアラームか（任意）"}},
     "required": ["time"]})
LIST_TIMERS = ToolFunction("list_timers", "セット中のタイマーとアラームを一覧する。")
CANCEL_TIMER = ToolFunction(
    "cancel_timer",
    "タイマーやアラームを取り消す。idかlabelで選ぶ。allがtrueなら全部。",
    {"type": "object", "properties": {
        "id": {"type": "string"}, "label": {"type": "string"},
        "all": {"type": "boolean"}}})

KIND_WORDS = {"timer": "タイマー", "alarm": "アラーム"}
_HHMM = re.compile(r"^\s*(\d{1,2})[:：時]\s*(\d{1,2})?\s*分?\s*$")


def say_duration(seconds: float) -> str:
    """3分 / 1時間30分 / 45秒 — how a duration is said."""
    total = round(seconds)
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{h}時間" if h else "", f"{m}分" if m else "", f"{s}秒" if s else ""]
    return "".join(parts) or "0秒"


def say_when(due: datetime, now: datetime) -> str:
    """14時08分 / 明日の7時00分 / 12月3日の7時00分, in ``now``'s zone."""
    local = due.astimezone(now.tzinfo)
    clock = f"{local.hour}時{local.minute:02d}分"
    days = (local.date() - now.date()).days
    if days == 0:
        return clock
    if days == 1:
        return f"明日の{clock}"
    if days == 2:
        return f"明後日の{clock}"
    if local.year != now.year:
        return f"{local.year}年{local.month}月{local.day}日の{clock}"
    return f"{local.month}月{local.day}日の{clock}"


def _number(arguments: dict[str, Any], key: str) -> float:
    value = arguments.get(key, 0) or 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"{key} must be a number")
    if value < 0:
        raise ToolError(f"{key} must not be negative")
    return float(value)


def _label(arguments: dict[str, Any]) -> str:
    label = arguments.get("label") or ""
    if not isinstance(label, str):
        raise ToolError("label must be a string")
    return label.strip()[:40]


def alarm_time(arguments: dict[str, Any], now: datetime) -> tuple[datetime, bool]:
    """When an alarm asked for with ``time`` (+ ``date`` or ``days_from_today``) rings,
    in ``now``'s zone; and whether a day was named. Raises :class:`ToolError`."""
    raw = arguments.get("time")
    match = _HHMM.match(raw) if isinstance(raw, str) else None
    if match is None:
        raise ToolError(f"time must be HH:MM, not {raw!r}")
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if hour > 23 or minute > 59:
        raise ToolError(f"{raw} is not a time of day")
    day: date = now.date()
    named = False
    if arguments.get("date"):
        try:
            day = date.fromisoformat(str(arguments["date"]))
        except ValueError:
            raise ToolError(f"date must be YYYY-MM-DD, not {arguments['date']!r}") from None
        named = True
    elif arguments.get("days_from_today") is not None:
        offset = arguments["days_from_today"]
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ToolError("days_from_today must be a whole number of days, 0 or more")
        day = now.date() + timedelta(days=offset)
        named = True
    assert now.tzinfo is not None
    return datetime.combine(day, time(hour, minute), tzinfo=now.tzinfo), named


class TimersTool(Tool):
    """Timers and alarms per person, persisted; spoken by the robot when they go off."""

    name = "timers"
    recognition_phrases = ("タイマー", "アラーム", "10秒", "3分", "5分", "起こして")
    Config: ClassVar[type[TimersConfig]] = TimersConfig
    config: TimersConfig

    def __init__(self, config: TimersConfig) -> None:
        super().__init__(config)
        self.book: TimerStorage | None = None

    async def _start(self) -> None:
        url = self.host.database_url
        if url:
            from omoide_skills.shared_timer_book import SharedTimerBook
            self.book = SharedTimerBook(url, self._went_off,
                                        poll_seconds=self.config.poll_seconds,
                                        lease_seconds=self.config.lease_seconds,
                                        handoff_seconds=self.config.handoff_seconds,
                                        reaches=self.host.reaches)
            await self.book.start()
            # a data folder that kept timers in a file before: they move in, once
            await self.book.import_file(self.host.data_dir / self.config.file)
            return
        self.book = TimerBook(self.host.data_dir / self.config.file, self._went_off)
        await self.book.start()

    async def _stop(self) -> None:
        if self.book is not None:
            await self.book.stop()
            self.book = None

    def functions(self) -> Sequence[ToolFunction]:
        return [SET_TIMER, SET_ALARM, LIST_TIMERS, CANCEL_TIMER]

    async def _invoke(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> Any:
        if self.book is None:
            raise ToolError("timers are not running")
        now = context.now.astimezone(zone_for(context, self.config))
        if function == "set_timer":
            return await self._set_timer(arguments, context, now)
        if function == "set_alarm":
            return await self._set_alarm(arguments, context, now)
        if function == "list_timers":
            return await self._list(context, now)
        return await self._cancel(arguments, context, now)

    async def _check_room(self, context: ToolContext) -> None:
        assert self.book is not None
        if len(await self.book.pending(context.user)) >= self.config.max_per_user:
            raise ToolError(f"タイマーはもう{self.config.max_per_user}個セットされているから、"
                            "これ以上はセットできないよ。")

    def _check_horizon(self, due: datetime, now: datetime) -> None:
        if due <= now:
            raise ToolError(f"{say_when(due, now)}はもう過ぎているから、セットできないよ。")
        if due - now > timedelta(days=self.config.max_days):
            raise ToolError(f"{say_when(due, now)}は先すぎるよ。"
                            f"セットできるのは{self.config.max_days:g}日先までだよ。")

    async def _set_timer(self, arguments: dict[str, Any], context: ToolContext,
                         now: datetime) -> dict[str, Any]:
        seconds = (_number(arguments, "hours") * 3600 + _number(arguments, "minutes") * 60
                   + _number(arguments, "seconds"))
        if seconds < 1:
            raise ToolError("タイマーの長さが0だよ。何分にする？")
        if seconds > self.config.max_days * 86400:
            raise ToolError(f"タイマーは{self.config.max_days:g}日までしかセットできないよ。")
        await self._check_room(context)
        due = now + timedelta(seconds=seconds)
        timer = Timer(uuid.uuid4().hex[:8], context.user, "timer", due.astimezone(UTC),
                      now.astimezone(UTC), _label(arguments), seconds, str(now.tzinfo))
        assert self.book is not None
        await self.book.add(timer)
        what = f"「{timer.label}」の" if timer.label else ""
        return {"id": timer.id, "kind": "timer", "due_at": due.isoformat(timespec="seconds"),
                "message": f"{what}{say_duration(seconds)}のタイマーをセットしたよ。"
                           f"{say_when(due, now)}に知らせるね。"}

    async def _set_alarm(self, arguments: dict[str, Any], context: ToolContext,
                         now: datetime) -> dict[str, Any]:
        due, named = alarm_time(arguments, now)
        if due <= now and not named:
            due += timedelta(days=1)   # 「7時に起こして」 at 22:00 means tomorrow
        self._check_horizon(due, now)
        await self._check_room(context)
        timer = Timer(uuid.uuid4().hex[:8], context.user, "alarm", due.astimezone(UTC),
                      now.astimezone(UTC), _label(arguments), None, str(now.tzinfo))
        assert self.book is not None
        await self.book.add(timer)
        return {"id": timer.id, "kind": "alarm", "due_at": due.isoformat(timespec="seconds"),
                "message": f"{say_when(due, now)}にアラームをセットしたよ。"}

    async def _list(self, context: ToolContext, now: datetime) -> dict[str, Any]:
        assert self.book is not None
        timers = await self.book.pending(context.user)
        items = [{"id": t.id, "kind": t.kind, "label": t.label,
                  "due_at": t.due_at.astimezone(now.tzinfo).isoformat(timespec="seconds"),
                  "remaining": say_duration((t.due_at - now).total_seconds())}
                 for t in timers]
        if not timers:
            message = "セット中のタイマーはないよ。"
        else:
            said = "、".join(f"{say_when(t.due_at, now)}の{KIND_WORDS[t.kind]}"
                            for t in timers[:5])
            message = f"セット中なのは{len(timers)}個で、{said}だよ。"
        return {"timers": items, "message": message}

    async def _cancel(self, arguments: dict[str, Any], context: ToolContext,
                      now: datetime) -> dict[str, Any]:
        assert self.book is not None
        mine = await self.book.pending(context.user)
        if arguments.get("all"):
            chosen = mine
        elif arguments.get("id"):
            chosen = [t for t in mine if t.id == str(arguments["id"])]
        elif arguments.get("label"):
            chosen = [t for t in mine if (t.label and t.label in str(arguments["label"]))
                      or str(arguments["label"]) in t.label]
        else:
            chosen = mine[:1] if len(mine) == 1 else []
            if len(mine) > 1:
                raise ToolError("タイマーがいくつかあるよ。どれを取り消すか、idかlabelで選んでね。")
        if not chosen:
            raise ToolError("取り消すタイマーが見つからなかったよ。")
        removed = await self.book.cancel([t.id for t in chosen])
        return {"cancelled": [t.id for t in removed],
                "message": f"タイマーを{len(removed)}個取り消したよ。"}

    async def _went_off(self, timer: Timer, late: bool) -> None:
        local = timer.due_at.astimezone(ZoneInfo(timer.zone))
        what = f"「{timer.label}」の" if timer.label else ""
        if timer.kind == "timer":
            text = f"{what}{say_duration(timer.duration_s or 0)}のタイマーが終わったよ！"
        else:
            text = f"{local.hour}時{local.minute:02d}分だよ！{what}アラームの時間だよ。"
        if late:
            text += "（omoideが止まっていたから、遅れてごめんね）"
        outcome = await self.host.announce(timer.user, text, Emotion.SURPRISED)
        if outcome.status == "dropped":
            raise RuntimeError(f"announcement dropped: {outcome.reason}")
