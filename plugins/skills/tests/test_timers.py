"""The timers skill: timers and alarms that survive restarts and speak when they go off."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from omoide.components import ToolContext, ToolError
from omoide.testing import ToolContract
from omoide.testing.doubles import ToolHostDouble
from omoide_skills.timers import TimersTool, alarm_time, say_duration

TOKYO_2200 = datetime(2026, 11, 30, 13, 0, tzinfo=UTC)   # 22:00 in Tokyo


def _context(now: datetime | None = None, user: str = "alice") -> ToolContext:
    return ToolContext(user, now or datetime.now(UTC), "Asia/Tokyo")


async def _timers(host: ToolHostDouble, **options: Any) -> TimersTool:
    tool = TimersTool(TimersTool.Config.model_validate(options))
    tool.attach(host)
    await tool.start()
    return tool


class TestTimers(ToolContract):
    component_cls = TimersTool

    @pytest.fixture
    def sample_calls(self) -> dict[str, dict[str, Any]]:
        return {"set_timer": {"minutes": 3}, "set_alarm": {"time": "07:00"},
                "list_timers": {}, "cancel_timer": {"all": True}}

    async def test_a_three_minute_timer_says_when_it_will_ring(
            self, component: TimersTool) -> None:
        said = await component.invoke("set_timer", {"minutes": 3}, _context(TOKYO_2200))
        assert said["message"] == "3分のタイマーをセットしたよ。22時03分に知らせるね。"
        assert said["due_at"] == "2026-11-30T22:03:00+09:00"

    async def test_wake_me_at_seven_tomorrow_sets_an_alarm_for_tomorrow_morning(
            self, component: TimersTool) -> None:
        said = await component.invoke("set_alarm", {"time": "07:00", "days_from_today": 1},
                                      _context(TOKYO_2200))
        assert said["due_at"] == "2026-12-01T07:00:00+09:00"
        assert said["message"] == "明日の7時00分にアラームをセットしたよ。"

    async def test_an_alarm_time_already_passed_today_means_tomorrow(
            self, component: TimersTool) -> None:
        said = await component.invoke("set_alarm", {"time": "7:30"}, _context(TOKYO_2200))
        assert said["due_at"] == "2026-12-01T07:30:00+09:00"

    async def test_an_alarm_in_the_past_is_refused(self, component: TimersTool) -> None:
        with pytest.raises(ToolError, match="もう過ぎている"):
            await component.invoke("set_alarm", {"time": "07:00", "days_from_today": 0},
                                   _context(TOKYO_2200))
        with pytest.raises(ToolError, match="もう過ぎている"):
            await component.invoke("set_alarm", {"time": "07:00", "date": "2020-01-01"},
                                   _context(TOKYO_2200))

    async def test_ten_years_ahead_is_refused(self, component: TimersTool) -> None:
        with pytest.raises(ToolError, match="先すぎる"):
            await component.invoke("set_alarm", {"time": "07:00", "date": "2036-11-30"},
                                   _context(TOKYO_2200))
        with pytest.raises(ToolError, match="366日"):
            await component.invoke("set_timer", {"hours": 24 * 3650}, _context(TOKYO_2200))

    @pytest.mark.parametrize("arguments", [{"minutes": 0}, {"minutes": -3},
                                           {"minutes": "three"}, {"minutes": True}])
    async def test_a_timer_without_a_sensible_length_is_refused(
            self, component: TimersTool, arguments: dict[str, Any]) -> None:
        with pytest.raises(ToolError):
            await component.invoke("set_timer", arguments, _context())

    async def test_timers_are_listed_and_cancelled_per_person(
            self, component: TimersTool) -> None:
        await component.invoke("set_timer", {"minutes": 3, "label": "パスタ"},
                               _context(TOKYO_2200))
        await component.invoke("set_timer", {"minutes": 10}, _context(TOKYO_2200, "bob"))
        listed = await component.invoke("list_timers", {}, _context(TOKYO_2200))
        assert [t["label"] for t in listed["timers"]] == ["パスタ"]
        assert "1個" in listed["message"]
        cancelled = await component.invoke("cancel_timer", {"label": "パスタ"},
                                           _context(TOKYO_2200))
        assert len(cancelled["cancelled"]) == 1
        assert (await component.invoke("list_timers", {}, _context()))["timers"] == []
        assert len((await component.invoke("list_timers", {}, _context(user="bob")))
                   ["timers"]) == 1

    async def test_cancelling_nothing_says_so(self, component: TimersTool) -> None:
        with pytest.raises(ToolError, match="見つからなかった"):
            await component.invoke("cancel_timer", {"all": True}, _context())


async def test_a_timer_that_goes_off_speaks_to_the_person(tmp_path: Path) -> None:
    host = ToolHostDouble(tmp_path, reachable=["alice"])
    tool = await _timers(host)
    try:
        await tool.invoke("set_timer", {"seconds": 1, "label": "お茶"}, _context())
        await asyncio.wait_for(host.announcement.wait(), 30)
    finally:
        await tool.stop()
    [(user, text, _)] = host.announced
    assert user == "alice" and text == "「お茶」の1秒のタイマーが終わったよ！"
    assert json.loads((tmp_path / "timers.json").read_text())["timers"] == []


async def test_timers_survive_a_restart(tmp_path: Path) -> None:
    host = ToolHostDouble(tmp_path)
    first = await _timers(host)
    await first.invoke("set_timer", {"hours": 2, "label": "洗濯"}, _context())
    await first.stop()
    again = await _timers(host)
    try:
        listed = await again.invoke("list_timers", {}, _context())
    finally:
        await again.stop()
    assert [t["label"] for t in listed["timers"]] == ["洗濯"]


async def test_a_timer_due_while_omoide_was_down_goes_off_late_with_an_apology(
        tmp_path: Path) -> None:
    past = datetime.now(UTC) - timedelta(minutes=5)
    (tmp_path / "timers.json").write_text(json.dumps({"timers": [{
        "id": "t1", "user": "alice", "kind": "alarm", "due_at": past.isoformat(),
        "created_at": (past - timedelta(hours=8)).isoformat(), "label": "",
        "duration_s": None, "zone": "Asia/Tokyo"}]}), encoding="utf-8")
    host = ToolHostDouble(tmp_path)
    tool = await _timers(host)
    try:
        await asyncio.wait_for(host.announcement.wait(), 30)
    finally:
        await tool.stop()
    [(_, text, _)] = host.announced
    assert "アラームの時間だよ" in text and "遅れてごめんね" in text


async def test_a_corrupt_timers_file_is_kept_aside_and_timers_start_empty(
        tmp_path: Path) -> None:
    (tmp_path / "timers.json").write_text("{broken", encoding="utf-8")
    tool = await _timers(ToolHostDouble(tmp_path))
    try:
        assert (await tool.invoke("list_timers", {}, _context()))["timers"] == []
    finally:
        await tool.stop()
    assert (tmp_path / "timers.corrupt").read_text() == "{broken"


def test_durations_are_said_in_japanese() -> None:
    assert [say_duration(s) for s in (45, 180, 5400, 3600)] == ["45秒", "3分", "1時間30分",
                                                               "1時間"]


@pytest.mark.parametrize("raw", ["7時間後", "25:00", "07:61", "seven", None])
def test_bad_alarm_times_are_refused(raw: Any) -> None:
    with pytest.raises(ToolError):
        alarm_time({"time": raw}, TOKYO_2200.astimezone())
