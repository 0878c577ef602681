"""The versions a worker has seen of each person, and what an announcement carries
(:mod:`omoide.memory.index.peer_channel`); the channel itself runs against a real
PostgreSQL in tests/database/test_cross_worker_recall.py."""

from __future__ import annotations

import json

from omoide.memory.index.peer_channel import (
    MAX_PAYLOAD_BYTES,
    PeerChange,
    SeenVersions,
    announcement,
    decode,
)


def test_versions_arriving_in_order_leave_nobody_behind() -> None:
    seen = SeenVersions()
    for v in (1, 2, 3):
        seen.arrived("alice", v)
    assert seen.behind([("alice", 3)]) == []


def test_a_version_delivered_late_fills_its_gap() -> None:
    seen = SeenVersions()
    seen.arrived("alice", 2)
    assert seen.behind([("alice", 2)], patient=True) == []  # 1 may still be on its way
    seen.arrived("alice", 1)
    assert seen.behind([("alice", 2)], patient=True) == []


def test_a_missed_version_is_found_at_once_after_a_reconnect() -> None:
    seen = SeenVersions()
    seen.arrived("alice", 1)
    assert seen.behind([("alice", 3), ("bob", 1)]) == ["alice", "bob"]
    assert seen.behind([("alice", 3), ("bob", 1)]) == []  # caught up: seen from now on


def test_while_listening_a_version_is_missed_only_if_still_missing_at_the_next_check(
        ) -> None:
    seen = SeenVersions()
    seen.arrived("alice", 1)
    assert seen.behind([("alice", 2)], patient=True) == []
    assert seen.behind([("alice", 2)], patient=True) == ["alice"]


def test_the_database_versions_taken_at_the_first_listen_count_as_seen() -> None:
    seen = SeenVersions()
    seen.record([("alice", 7)])
    seen.arrived("alice", 8)
    assert seen.behind([("alice", 8)]) == []


def test_an_announcement_names_the_ids_unless_they_would_not_fit() -> None:
    small = announcement("alice", "w1", ["m1", "m2"], ["m3"])
    assert json.loads(small["stored"]) == ["m1", "m2"]
    many = [f"memory-{i:06d}" for i in range(MAX_PAYLOAD_BYTES // 10)]
    large = announcement("alice", "w1", many, [])
    assert large["stored"] == "null" and large["forgotten"] == "[]"


def test_a_notification_is_read_back_or_refused() -> None:
    payload = json.dumps({"p": "alice", "v": 4, "w": "w1", "s": ["m1"], "f": []})
    assert decode(payload) == PeerChange("alice", 4, "w1", ("m1",), ())
    assert decode(json.dumps({"p": "alice", "v": 5, "w": "w1", "s": None, "f": []})) == \
        PeerChange("alice", 5, "w1", None, ())
    assert decode("not json") is None
    assert decode(json.dumps({"p": "alice"})) is None
