"""The people view with more people than a page: the console shows the first page of
``GET /v1/users`` and fetches the next ones when asked (issue 27: 10,000 people took
8.5 s and 1.6 MB in one answer)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

PEOPLE = [f"person{i:03d}" for i in range(130)]


@pytest.fixture(scope="module")
def many_people(omoide_server: Any) -> Any:
    with omoide_server.client() as c:
        for user in PEOPLE:
            c.post("/v1/users", json={"user": user}).raise_for_status()
    return omoide_server


def test_the_people_view_shows_a_page_and_fetches_the_next_when_asked(
        page: Any, many_people: Any) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/v1/users?" in r.url else None)
    many_people.sign_in(page, many_people.admin_token())
    rows = page.locator("#people-table tbody tr")
    expect(rows).to_have_count(100)
    expect(page.locator("#people-count")).to_have_text("Showing the first 100 people.")
    expect(rows.last).to_contain_text("person099")
    page.get_by_role("button", name="Show more people").click()
    expect(rows).to_have_count(130)
    expect(rows.last).to_contain_text("person129")
    expect(page.locator("#people-count")).to_have_text("130 people.")
    expect(page.get_by_role("button", name="Show more people")).to_be_hidden()
    assert any("cursor=person099" in url for url in requests), requests
    assert page.console_errors == []
