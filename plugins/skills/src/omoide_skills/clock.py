"""The ``clock`` tool: today's date and the time, in the person's own time zone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from omoide.api import Tool, ToolContext, ToolFunction
from omoide_skills.user_zones import WEEKDAYS_JA, ZonedToolConfig, zone_for


class ClockConfig(ZonedToolConfig):
    pass


CURRENT_TIME = ToolFunction(
    "current_time",
    "今の日付・曜日・時刻を調べる（相手のいる地域の時刻）。「今何時？」「今日は何日？」に使う。")


class ClockTool(Tool):
    """Tells the date, weekday and time where the person is."""

    name = "clock"
    recognition_phrases = ("今何時", "何曜日", "何日")
    Config: ClassVar[type[ClockConfig]] = ClockConfig
    config: ClockConfig

    def functions(self) -> Sequence[ToolFunction]:
        return [CURRENT_TIME]

    async def _invoke(self, function: str, arguments: dict[str, Any],
                      context: ToolContext) -> Any:
        zone = zone_for(context, self.config)
        now = context.now.astimezone(zone)
        weekday = WEEKDAYS_JA[now.weekday()] + "曜日"
        date = f"{now.year}年{now.month}月{now.day}日"
        clock = f"{now.hour}時{now.minute:02d}分"
        return {"timezone": zone.key, "iso": now.isoformat(timespec="seconds"),
                "date": date, "weekday": weekday, "time": clock,
                "message": f"今日は{date}{weekday}、今は{clock}だよ。"}
