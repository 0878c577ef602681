"""Announcements waiting for an offline robot, on the shared database: a message queued
on worker A is said when the person's robot connects to worker B, exactly once (issue 30).

Each queue here is another worker: its own pool on the test's throwaway PostgreSQL and
its own data dir.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from omoide.announcements import MAX_QUEUED_PER_USER, Announcement, AnnouncementQueue, Announcer
from omoide.postgres_announcements import PostgresAnnouncementQueue, queue_for
from omoide.types import Emotion

AT = datetime(2026, 12, 2, 2, 0, tzinfo=UTC)


def _message(i: int, user: str = "alice") -> Announcement:
    return Announcement(f"m{i}", user, f"時間だよ{i}。", Emotion.HAPPY, AT)


@pytest.fixture
def worker(postgres_url: str, tmp_path: Path) -> Iterator[Callable[[], PostgresAnnouncementQueue]]:
    opened: list[PostgresAnnouncementQueue] = []

    def make() -> PostgresAnnouncementQueue:
        queue = PostgresAnnouncementQueue(
            postgres_url, tmp_path / f"worker{len(opened)}" / "announcements.json")
        queue.path.parent.mkdir()
        opened.append(queue)
        return queue

    yield make
    for queue in opened:
        queue.close()


async def test_an_announcement_queued_on_one_worker_is_taken_once_on_another(worker) -> None:
    a, b = worker(), worker()
    await a.add(_message(0))
    await a.add(_message(1))
    assert [m.id for m in await a.pending("alice")] == ["m0", "m1"]
    taken = await b.take("alice")
    assert taken == [_message(0), _message(1)]   # oldest first, every field kept
    assert await a.take("alice") == []
    assert await b.take("alice") == []


async def test_two_workers_taking_at_once_get_each_message_exactly_once(worker) -> None:
    a, b, c = worker(), worker(), worker()
    for i in range(MAX_QUEUED_PER_USER):
        await c.add(_message(i))
    await c.add(_message(99, user="bob"))
    rounds = []
    for _ in range(3):   # the robot reconnects through A and B at the same moment
        first, second = await asyncio.gather(a.take("alice"), b.take("alice"))
        rounds.append(sorted(m.id for m in first + second))
    assert rounds[0] == sorted(f"m{i}" for i in range(MAX_QUEUED_PER_USER))
    assert rounds[1:] == [[], []]
    assert [m.id for m in await a.take("bob")] == ["m99"]


async def test_at_most_the_newest_are_kept_per_person(worker) -> None:
    a, b = worker(), worker()
    for i in range(MAX_QUEUED_PER_USER + 3):
        await (a if i % 2 else b).add(_message(i))
    taken = await b.take("alice")
    assert [m.id for m in taken] == [f"m{i}" for i in range(3, MAX_QUEUED_PER_USER + 3)]


async def test_the_announcer_of_one_worker_queues_for_the_robot_on_another(worker) -> None:
    a, b = worker(), worker()
    said = await Announcer([], None, a).announce("alice", "[happy] お茶の時間だよ。")
    assert said.status == "queued"   # no robot of alice's on worker A
    delivered = await Announcer([], None, b).take_pending("alice")
    assert [m.text for m in delivered] == ["[happy] お茶の時間だよ。"]
    assert [s for s, _audio in delivered[0].sentences] == ["お茶の時間だよ。"]
    assert await Announcer([], None, a).take_pending("alice") == []


async def test_an_unreachable_database_keeps_messages_in_the_workers_file(
        tmp_path: Path) -> None:
    from tests.database.conftest import free_port

    queue = PostgresAnnouncementQueue(f"postgresql://omoide@127.0.0.1:{free_port()}/none",
                                      tmp_path / "announcements.json", timeout_s=0.5)
    await queue.add(_message(0))
    assert (tmp_path / "announcements.json").exists()
    assert [m.id for m in await queue.take("alice")] == ["m0"]
    assert await queue.take("alice") == []
    queue.close()


def test_the_database_url_chooses_the_shared_queue(postgres_url: str, tmp_path: Path) -> None:
    path = tmp_path / "announcements.json"
    local = queue_for(path, None)
    assert type(local) is AnnouncementQueue and local.path == path
    shared = queue_for(path, postgres_url)
    assert isinstance(shared, PostgresAnnouncementQueue) and shared.path == path
    shared.close()
