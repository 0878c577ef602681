"""The JSON routes behind the console: people, what was said, live turns, forget with
undo, relevance search; who may see what."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from omoide.testing.auth import admin_headers, person_headers

Make = Callable[..., TestClient]


def _admin(client: TestClient) -> dict[str, str]:
    return admin_headers(client.app)


def test_the_admin_lists_everyone_with_counts_and_the_assistants_zone(
        make_client: Make) -> None:
    c = make_client()
    h = _admin(c)
    c.post("/v1/turns", json={"user": "alice", "text": "こんにちは"}, headers=h)
    c.post("/v1/users/bob/memories/import", headers={**h, "content-type": "application/x-ndjson"},
           content='{"text": "あなたは将棋が好きだ。"}\n')
    body = c.get("/v1/users", headers=h).json()
    people = {p["user"]: p for p in body["people"]}
    assert body["timezone"] == "Asia/Tokyo"
    assert people["alice"]["pending"] == 1 and people["alice"]["last_turn"] is not None
    assert people["bob"]["memories"] == {"live": 1, "superseded": 0}
    assert people["bob"]["last_turn"] is None


def test_a_persons_token_lists_only_that_person(make_client: Make) -> None:
    c = make_client()
    for user in ("alice", "bob"):
        c.post("/v1/users", json={"user": user}, headers=_admin(c))
    listed = c.get("/v1/users", headers=person_headers(c.app, "bob")).json()["people"]
    assert [p["user"] for p in listed] == ["bob"]


def test_adding_a_person_answers_201_then_200(make_client: Make) -> None:
    c = make_client()
    first = c.post("/v1/users", json={"user": "carol"}, headers=_admin(c))
    again = c.post("/v1/users", json={"user": "carol"}, headers=_admin(c))
    assert (first.status_code, first.json()["created"]) == (201, True)
    assert (again.status_code, again.json()["created"]) == (200, False)


def test_a_person_cannot_add_people(make_client: Make) -> None:
    c = make_client()
    r = c.post("/v1/users", json={"user": "mallory"}, headers=person_headers(c.app, "bob"))
    assert r.status_code == 403


def test_a_mistyped_person_is_not_found_rather_than_empty(make_client: Make) -> None:
    c = make_client()
    c.post("/v1/users", json={"user": "alice"}, headers=_admin(c))
    r = c.get("/v1/users/alicee", headers=_admin(c))
    assert r.status_code == 404 and "alicee" in r.json()["error"]


def test_an_invalid_person_id_is_refused_naming_the_rule(make_client: Make) -> None:
    c = make_client()
    r = c.post("/v1/users", json={"user": "a b"}, headers=_admin(c))
    assert r.status_code == 422 and r.json()["problems"][0]["path"] == "body.user"


def test_what_was_said_is_read_for_that_person_only(make_client: Make) -> None:
    c = make_client()
    h = _admin(c)
    c.post("/v1/turns", json={"user": "alice", "text": "箱根に行くんだ"}, headers=h)
    [pending] = c.get("/v1/memory/pending?user=alice", headers=h).json()["pending"]
    server = c.app.state.omoide
    ids = [row[0] for row in server.memory.journal._run("SELECT id FROM exchanges")]
    mine = c.get(f"/v1/users/alice/exchanges?ids={ids[0]}", headers=h).json()["exchanges"]
    theirs = c.get(f"/v1/users/bob/exchanges?ids={ids[0]}", headers=h).json()["exchanges"]
    assert pending["exchanges"] == 1
    assert [e["user_text"] for e in mine] == ["箱根に行くんだ"] and theirs == []


def test_a_turn_is_kept_whole_for_the_console(make_client: Make) -> None:
    c = make_client()
    h = _admin(c)
    c.post("/v1/turns", json={"user": "alice", "text": "やあ"}, headers=h)
    [turn] = c.get("/v1/users/alice/turns", headers=h).json()["turns"]
    assert (turn["transcript"], turn["reply"], turn["face"], turn["device"]) == (
        "やあ", "今日はいい日だよ。", "happy", "http")
    assert {"end_of_speech", "retrieve", "chat", "done"} <= set(turn["stages"])
    assert turn["degraded"] == [] and turn["memories"] == []


def test_a_degraded_turn_says_what_failed(make_client: Make) -> None:
    c = make_client(chat={"use": "fake", "fail_with": "quota exceeded"})
    h = _admin(c)
    c.post("/v1/turns", json={"user": "alice", "text": "やあ"}, headers=h)
    [turn] = c.get("/v1/turns", headers=h).json()["turns"]
    assert turn["face"] == "sad"
    assert any("quota exceeded" in note for note in turn["degraded"])


def test_a_person_sees_only_their_own_turns(make_client: Make) -> None:
    c = make_client()
    h = _admin(c)
    for user in ("alice", "bob"):
        c.post("/v1/turns", json={"user": user, "text": "やあ"}, headers=h)
    bob = person_headers(c.app, "bob")
    assert c.get("/v1/turns", headers=bob).status_code == 403
    assert c.get("/v1/users/alice/turns", headers=bob).status_code == 403
    assert [t["user"] for t in c.get("/v1/users/bob/turns", headers=bob).json()["turns"]] == [
        "bob"]


def test_the_live_stream_replays_a_persons_turns_as_events(make_client: Make) -> None:
    c = make_client()
    h = _admin(c)
    for user in ("alice", "bob", "alice"):
        c.post("/v1/turns", json={"user": user, "text": f"{user}です"}, headers=h)
    events: list[dict[str, Any]] = []
    with c.stream("GET", "/v1/users/alice/turns/events", headers=h) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
            if len(events) == 2:
                break
    assert [e["transcript"] for e in events] == ["aliceです", "aliceです"]
    assert events[0]["seq"] < events[1]["seq"]


def test_forgetting_answers_an_undo_ticket_that_restores(make_client: Make) -> None:
    c = make_client()
    h = _admin(c)
    c.post("/v1/users/alice/memories/import", headers={**h, "content-type": "application/json"},
           content=json.dumps([{"text": "あなたは紅茶が好きだ。"}], ensure_ascii=False))
    [memory] = c.get("/v1/users/alice/memories", headers=h).json()["memories"]
    forgotten = c.delete(f"/v1/users/alice/memories/{memory['id']}", headers=h).json()
    ticket = forgotten["undo"]["ticket"]
    assert c.get("/v1/users/alice/memories", headers=h).json()["memories"] == []
    restored = c.post(f"/v1/users/alice/forgotten/{ticket}/restore", headers=h)
    assert restored.json()["outcome"] == "restored"
    assert [m["id"] for m in c.get("/v1/users/alice/memories", headers=h).json()[
        "memories"]] == [memory["id"]]
    assert c.post(f"/v1/users/alice/forgotten/{ticket}/restore", headers=h).status_code == 404


def test_a_search_with_a_threshold_says_why_each_memory_is_listed(make_client: Make) -> None:
    c = make_client()
    h = _admin(c)
    c.post("/v1/users/alice/memories/import", headers={**h, "content-type": "application/json"},
           content=json.dumps([{"text": "あなたは猫を飼っている。"},
                               {"text": "あなたは株を買った。"}], ensure_ascii=False))
    body = c.get("/v1/users/alice/memories?q=猫&min_relevance=0.5", headers=h).json()
    [hit] = body["memories"]
    assert hit["text"] == "あなたは猫を飼っている。" and hit["evidence"]["words"] == ["猫"]
    assert hit["relevance"] >= 0.5


def test_the_page_and_its_files_are_served_without_a_token(make_client: Make) -> None:
    c = make_client()
    for path, kind in [("/", "text/html"), ("/console/app.js", "text/javascript"),
                       ("/console/gantt.js", "text/javascript"), ("/console/app.css", "text/css"),
                       ("/console/icon.svg", "image/svg+xml"), ("/favicon.ico", "image/svg+xml")]:
        r = c.get(path)
        assert (r.status_code, r.headers["content-type"].split(";")[0]) == (200, kind), path
