"""The clock skill: date, weekday and time where the person is."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from omoide.components import ToolContext
from omoide.testing import ToolContract
from omoide_skills.clock import ClockTool

MONDAY_NOON_UTC = datetime(2026, 11, 30, 12, 5, tzinfo=UTC)


class TestClock(ToolContract):
    component_cls = ClockTool

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"user_timezones": {"bob": "Europe/Berlin"}}

    @pytest.fixture
    def sample_calls(self) -> dict[str, dict[str, Any]]:
        return {"current_time": {}}

    async def test_tells_the_time_in_the_assistants_zone(self, component: ClockTool) -> None:
        said = await component.invoke("current_time", {}, ToolContext(
            "alice", MONDAY_NOON_UTC, "Asia/Tokyo"))
        assert said["time"] == "21時05分" and said["weekday"] == "月曜日"
        assert "2026年11月30日月曜日" in said["message"]

    async def test_a_person_with_their_own_zone_hears_their_own_time(
            self, component: ClockTool) -> None:
        said = await component.invoke("current_time", {}, ToolContext(
            "bob", MONDAY_NOON_UTC, "Asia/Tokyo"))
        assert said["time"] == "13時05分" and said["timezone"] == "Europe/Berlin"


def test_an_unknown_zone_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        ClockTool.Config.model_validate({"user_timezones": {"bob": "Mars/Base"}})
