"""Quarantined exchanges in the console: the reason, the count, skip (the admin), and a
person seeing their own. The server's chat model answers extraction with prose, so the
one exchange it is given is quarantined after one attempt."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

SERVER_CHAT = {"use": "fake", "reply": "[happy] うまく抜き出せませんでした"}
SERVER_EXTRACTION = {"attempts": 1, "max_attempts": 1}


@pytest.fixture(scope="module")
def quarantined(omoide_server: Any) -> Any:
    omoide_server.text_turn("quinn", "猫のむぎを飼ってるんだ")
    with omoide_server.client() as c:
        report = c.post("/v1/memory/extract", json={"user": "quinn"}).json()
    assert len(report["quarantined"]) == 1, report
    return omoide_server


def test_the_admin_sees_why_an_exchange_was_quarantined_and_skips_it(
        page: Any, quarantined: Any) -> None:
    quarantined.sign_in(page, quarantined.admin_token())
    row = page.locator("#people-table").get_by_role("row").filter(has_text="quinn")
    expect(row.locator("td[data-label='Quarantined']")).to_have_text("1")
    row.get_by_role("link", name="quinn").click()
    box = page.locator("#quarantine")
    expect(box).to_contain_text("猫のむぎを飼ってるんだ")
    expect(box).to_contain_text("Reason:")
    quarantined.screenshot(page, "12-quarantine")
    box.get_by_role("button", name="Skip exchange 1 for good").click()
    expect(box).to_contain_text("Nothing is quarantined.")
    expect(page.locator("#person-summary")).to_contain_text("Quarantined0")


def test_a_person_sees_their_quarantine_but_cannot_change_it(
        page: Any, quarantined: Any) -> None:
    quarantined.text_turn("rin", "今度の土曜日に映画を観るんだ")
    with quarantined.client() as c:
        c.post("/v1/memory/extract", json={"user": "rin"}).raise_for_status()
    quarantined.sign_in(page, quarantined.person_token("rin"))
    box = page.locator("#quarantine")
    expect(box).to_contain_text("今度の土曜日に映画を観るんだ")
    expect(box.get_by_role("button")).to_have_count(0)
    expect(page.get_by_role("button", name="Extract now")).to_have_count(0)
