"""The console's moments, in a browser: a person sees what omoide will say first, can
cancel one and switch moments off; the page stays accessible."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect


@pytest.fixture(scope="module")
def planner(omoide_server: Any) -> Any:
    """mika plans a trip to 箱根 three days from now (Tokyo time)."""
    tokyo = ZoneInfo("Asia/Tokyo")
    day = datetime.now(tokyo).date() + timedelta(days=3)
    omoide_server.add_person("mika")
    omoide_server.import_memories("mika", [{
        "id": "trip", "text": f"あなたは{day.month}月{day.day}日に箱根へ旅行する予定だ。",
        "kind": "plan", "event_dates": [day.isoformat()], "entities": ["箱根"],
        "created_at": datetime.now(tokyo).isoformat()}])
    return omoide_server


def test_a_person_lists_cancels_and_switches_off_their_moments(page: Any,
                                                               planner: Any) -> None:
    planner.sign_in(page, planner.person_token("mika"))
    moments = page.locator("#moments")
    expect(moments.locator("li")).to_have_count(3)   # the day before, the morning of, after
    expect(moments).to_contain_text("day_before")
    assert planner.axe_violations(page) == []
    moments.get_by_role("button", name="Cancel").first.click()
    expect(moments.get_by_role("button", name="Cancel")).to_have_count(2)
    expect(moments).to_contain_text("cancelled")
    switch = page.get_by_label("Never speak first to mika")
    switch.check()
    expect(page.get_by_label("Never speak first to mika")).to_be_checked()
    with planner.client() as c:
        assert c.get("/v1/users/mika/moments").json()["off"] is True
    planner.screenshot(page, "moments")
    assert page.console_errors == []


def test_a_person_sets_their_own_quiet_hours_and_gives_them_back(page: Any,
                                                                 planner: Any) -> None:
    planner.sign_in(page, planner.person_token("mika"))
    moments = page.locator("#moments")
    expect(moments).to_contain_text("the household's")
    page.get_by_label("Quiet hours").fill("21:00-6:30")
    moments.get_by_role("button", name="Save").click()
    expect(moments).to_contain_text("mika's own")
    expect(page.get_by_label("Quiet hours")).to_have_value("21:00-06:30")
    with planner.client() as c:
        assert c.get("/v1/users/mika/moments").json()["quiet_hours"] == "21:00-06:30"
    assert planner.axe_violations(page) == []
    moments.get_by_role("button", name="Use the default").click()
    expect(moments).to_contain_text("the household's")
    assert page.console_errors == []


def test_a_reminder_is_stopped_for_good_from_the_console(page: Any,
                                                         omoide_server: Any) -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    omoide_server.add_person("rika")
    omoide_server.import_memories("rika", [{
        "id": "pills",
        "text": "あなたは毎朝8時に薬を飲むので、その時間に声をかけてほしいと頼んだ。",
        "kind": "habit", "created_at": (datetime.now(tokyo) - timedelta(days=2)).isoformat()}])
    omoide_server.sign_in(page, omoide_server.person_token("rika"))
    moments = page.locator("#moments")
    expect(moments).to_contain_text("reminder")
    stop = moments.get_by_role("button", name="Stop for good")
    assert stop.count() >= 1
    stop.first.click()
    expect(moments.get_by_role("button", name="Stop for good")).to_have_count(0)
    with omoide_server.client() as c:
        listing = c.get("/v1/users/rika/moments").json()
    assert listing["upcoming"] == []
    [stopped] = listing["said"]   # one entry for every day's reminder
    assert stopped["key"].endswith(":reminder") and stopped["state"] == "cancelled"
    assert page.console_errors == []
