"""Reliability (issue 27, point 7): ``GET /v1/users`` comes in pages.

With 10,000 people the unpaged list took 8.5 s and 1.6 MB. Now ``?limit=N`` gives at
most N people, sorted by id, with a ``next`` cursor while more follow; following the
cursors lists everyone exactly once. Without parameters the answer keeps its shape (the
timezone, the features, the people) and gives the first page. Speed is measured by
``tests/reliability/measure_people_pages.py``, not asserted here.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest

PEOPLE = [f"p{i:02d}" for i in range(7)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, start_omoide: Any) -> Any:
    data: Path = tmp_path_factory.mktemp("people") / "data"
    s = start_omoide(data)
    try:
        for user in reversed(PEOPLE):
            s.post("/v1/users", {"user": user})
        yield s
    finally:
        s.stop()


def page(server: Any, **query: str) -> dict[str, Any]:
    return dict(server.get("/v1/users?" + urllib.parse.urlencode(query)))


def test_a_page_holds_at_most_limit_people_and_a_cursor_to_the_next(server: Any) -> None:
    first = page(server, limit="3")
    assert [p["user"] for p in first["people"]] == PEOPLE[:3]
    assert first["next"]
    assert first["timezone"] and "features" in first


def test_following_the_cursors_lists_everyone_once(server: Any) -> None:
    seen: list[str] = []
    body = page(server, limit="3")
    while True:
        seen += [p["user"] for p in body["people"]]
        if not body["next"]:
            break
        body = page(server, limit="3", cursor=body["next"])
    assert seen == PEOPLE


def test_the_last_page_has_no_cursor(server: Any) -> None:
    body = page(server, limit="7")
    assert len(body["people"]) == 7 and body["next"] is None


def test_without_parameters_the_first_page_keeps_the_old_shape(server: Any) -> None:
    body = page(server)
    assert [p["user"] for p in body["people"]] == PEOPLE
    assert set(body) >= {"timezone", "features", "people", "next"}
    assert set(body["people"][0]) >= {"user", "memories", "exchanges", "pending", "last_turn"}


@pytest.mark.parametrize("query", [{"limit": "0"}, {"limit": "100000"},
                                   {"cursor": "../../etc"}])
def test_a_bad_limit_or_cursor_is_a_4xx(server: Any, query: dict[str, str]) -> None:
    body = page(server, **query)
    assert "problems" in body or "error" in body, body
