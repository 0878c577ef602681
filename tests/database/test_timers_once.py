"""Timers go off once across workers: the timers tool keeps its timers in its data
folder without ``database.url`` (one worker, unchanged) and in PostgreSQL with one, where
every worker sees every timer and each timer is announced by one worker — the one that
set it, or another when that one died, and never after a cancel on any worker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from omoide.components import AnnounceOutcome, ToolContext, ToolError
from omoide.testing.doubles import ToolHostDouble
from omoide.types import Emotion
from omoide_skills.shared_timer_book import SharedTimerBook
from omoide_skills.timer_book import TimerBook
from omoide_skills.timers import TimersTool

Worker = Callable[..., Awaitable[TimersTool]]
LATE = "（omoideが止まっていたから、遅れてごめんね）"


def _context(user: str = "alice") -> ToolContext:
    return ToolContext(user, datetime.now(UTC), "Asia/Tokyo")


async def _until(condition: Callable[[], bool], what: str, limit_s: float = 30.0) -> None:
    """Wait for ``condition`` (a bound on waiting, not a measurement)."""
    for _ in range(int(limit_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"waited {limit_s:.0f} s for {what}")


class HangingHost(ToolHostDouble):
    """A worker whose announcement never finishes (it dies while saying a timer)."""

    def __init__(self, data_dir: Path, **options: Any) -> None:
        super().__init__(data_dir, **options)
        self.saying = asyncio.Event()

    async def announce(self, user: str, text: str,
                       emotion: Emotion = Emotion.NEUTRAL) -> AnnounceOutcome:
        self.saying.set()
        await asyncio.Event().wait()
        raise AssertionError("never reached")


@pytest.fixture
async def workers(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
                  ) -> AsyncIterator[Worker]:
    """Starts timers tools as workers would: each its own data folder, all on the one
    database (PostgreSQL), or one data folder shared in turn (SQLite: restarts)."""
    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    started: list[TimersTool] = []

    async def start(name: str = "a", *, host_cls: type[ToolHostDouble] = ToolHostDouble,
                    reachable: tuple[str, ...] = ("alice", "bob"),
                    **options: Any) -> TimersTool:
        folder = tmp_path / (name if url else "data")
        host = host_cls(folder, reachable=reachable, database_url=url)
        tool = TimersTool(TimersTool.Config.model_validate(
            {"poll_seconds": 0.2, "lease_seconds": 2, **options}))
        tool.attach(host)
        await tool.start()
        started.append(tool)
        return tool

    yield start
    for tool in started:
        await tool.stop()


def _said(*tools: TimersTool) -> list[str]:
    return [text for tool in tools for _, text, _ in tool.host.announced]  # type: ignore[attr-defined]


@pytest.fixture
def backend() -> str:
    """Most tests below share one database between workers: PostgreSQL; the first few
    run on both storages (parametrized)."""
    return "postgresql"


BOTH = pytest.mark.parametrize("backend", ["sqlite", "postgresql"])


# -- both storages -------------------------------------------------------------------
@BOTH
async def test_the_database_url_picks_where_timers_live(workers: Worker,
                                                        backend: str) -> None:
    tool = await workers()
    assert type(tool.book) is (SharedTimerBook if backend == "postgresql" else TimerBook)


@BOTH
async def test_timers_are_kept_listed_and_cancelled(workers: Worker) -> None:
    """(Stopping right after a timer was set also returns: Python 3.11's wait_for used
    to swallow that cancel and the book's loop ran on.)"""
    first = await workers("a")
    pasta = await first.invoke("set_timer", {"minutes": 9, "label": "パスタ"}, _context())
    await first.invoke("set_alarm", {"time": "07:00", "days_from_today": 1}, _context())
    await first.invoke("set_timer", {"minutes": 3}, _context("bob"))
    await first.stop()
    again = await workers("b")   # a restart, or another worker
    listed = await again.invoke("list_timers", {}, _context())
    assert [t["kind"] for t in listed["timers"]] == ["timer", "alarm"]
    done = await again.invoke("cancel_timer", {"label": "パスタ"}, _context())
    assert done["cancelled"] == [pasta["id"]]
    assert [t["kind"] for t in (await again.invoke("list_timers", {}, _context()))["timers"]
            ] == ["alarm"]


@BOTH
async def test_a_timer_goes_off_once(workers: Worker) -> None:
    tool = await workers()
    await tool.invoke("set_timer", {"seconds": 1, "label": "卵"}, _context())
    await _until(lambda: len(_said(tool)) == 1, "the timer")
    await tool.invoke("set_timer", {"seconds": 1, "label": "次"}, _context())
    await _until(lambda: len(_said(tool)) == 2, "the second timer")
    assert _said(tool) == ["「卵」の1秒のタイマーが終わったよ！",
                           "「次」の1秒のタイマーが終わったよ！"]
    assert (await tool.invoke("list_timers", {}, _context()))["timers"] == []


@BOTH
async def test_timers_on_either_storage_fire_for_the_person_who_set_them(
        workers: Worker) -> None:
    tool = await workers()
    await tool.invoke("set_timer", {"seconds": 1}, _context("bob"))
    await _until(lambda: len(_said(tool)) == 1, "bob's timer")
    [(user, text, _)] = tool.host.announced  # type: ignore[attr-defined]
    assert (user, text) == ("bob", "1秒のタイマーが終わったよ！")


# -- several workers on PostgreSQL ---------------------------------------------------------
async def test_a_timer_set_on_one_worker_goes_off_once_among_three(
        workers: Worker) -> None:
    a, b, c = await workers("a"), await workers("b"), await workers("c")
    await a.invoke("set_timer", {"seconds": 1, "label": "卵"}, _context())
    await b.invoke("set_timer", {"seconds": 2, "label": "あと"}, _context())
    await _until(lambda: len(_said(a, b, c)) >= 2, "both timers")
    await asyncio.sleep(0.6)   # three more looks of every worker
    assert sorted(_said(a, b, c)) == ["「あと」の2秒のタイマーが終わったよ！",
                                      "「卵」の1秒のタイマーが終わったよ！"]


async def test_many_due_timers_are_shared_out_each_said_once(workers: Worker) -> None:
    a, b = await workers("a", max_per_user=50), await workers("b", max_per_user=50)
    for i in range(30):
        await (a if i % 2 else b).invoke("set_timer", {"seconds": 1, "label": f"t{i}"},
                                         _context())
    await _until(lambda: len(_said(a, b)) >= 30, "thirty timers")
    await asyncio.sleep(0.6)
    said = _said(a, b)
    assert sorted(said) == sorted(f"「t{i}」の1秒のタイマーが終わったよ！" for i in range(30))


async def test_a_timer_whose_worker_stopped_goes_off_on_another(workers: Worker) -> None:
    a, b = await workers("a"), await workers("b")
    await a.invoke("set_timer", {"seconds": 1, "label": "卵"}, _context())
    await a.stop()
    await _until(lambda: len(_said(b)) == 1, "b to take the timer")
    assert _said(a, b) == ["「卵」の1秒のタイマーが終わったよ！"]


async def test_a_worker_dying_while_it_announces_hands_the_timer_on_after_its_lease(
        workers: Worker) -> None:
    dying = await workers("a", host_cls=HangingHost, lease_seconds=1)
    await dying.invoke("set_timer", {"seconds": 1, "label": "卵"}, _context())
    await _until(dying.host.saying.is_set, "a to take the timer")  # type: ignore[attr-defined]
    other = await workers("b")
    await dying.stop()   # killed mid-announcement: its claim is left in the database
    await _until(lambda: len(_said(other)) == 1, "b to take over after the lease")
    await asyncio.sleep(0.6)
    assert _said(dying, other) == ["「卵」の1秒のタイマーが終わったよ！" + LATE]
    assert (await other.invoke("list_timers", {}, _context()))["timers"] == []


async def test_a_timer_cancelled_on_another_worker_never_goes_off(workers: Worker) -> None:
    a, b = await workers("a"), await workers("b")
    set_on_a = await a.invoke("set_timer", {"seconds": 2, "label": "取消"}, _context())
    listed = await b.invoke("list_timers", {}, _context())
    assert [t["id"] for t in listed["timers"]] == [set_on_a["id"]]
    done = await b.invoke("cancel_timer", {"id": set_on_a["id"]}, _context())
    assert done["cancelled"] == [set_on_a["id"]]
    await b.invoke("set_timer", {"seconds": 3, "label": "後"}, _context())
    await _until(lambda: len(_said(a, b)) >= 1, "the later timer")
    await asyncio.sleep(0.6)
    assert _said(a, b) == ["「後」の3秒のタイマーが終わったよ！"]


async def test_the_per_person_limit_counts_every_workers_timers(workers: Worker) -> None:
    a, b = await workers("a", max_per_user=2), await workers("b", max_per_user=2)
    await a.invoke("set_timer", {"minutes": 5}, _context())
    await b.invoke("set_timer", {"minutes": 6}, _context())
    with pytest.raises(ToolError, match="もう2個"):
        await a.invoke("set_timer", {"minutes": 7}, _context())


async def test_the_worker_the_persons_robot_is_connected_to_says_their_timer(
        workers: Worker) -> None:
    elsewhere = await workers("a", reachable=(), handoff_seconds=600)
    robots_worker = await workers("b", reachable=("alice",), handoff_seconds=600)
    await elsewhere.invoke("set_timer", {"seconds": 1, "label": "卵"}, _context())
    await _until(lambda: len(_said(robots_worker)) == 1, "the robot's worker")
    assert _said(elsewhere) == []


async def test_a_timer_for_a_person_no_worker_reaches_is_taken_after_the_handoff_once(
        workers: Worker) -> None:
    a = await workers("a", reachable=(), handoff_seconds=1)
    b = await workers("b", reachable=(), handoff_seconds=1)
    await a.invoke("set_timer", {"seconds": 1, "label": "卵"}, _context())
    await _until(lambda: len(_said(a, b)) == 1, "a worker to take it after the handoff")
    await asyncio.sleep(0.6)
    assert _said(a, b) == ["「卵」の1秒のタイマーが終わったよ！"]


async def test_a_workers_timers_file_moves_into_the_database_at_its_first_start(
        postgres_url: str, tmp_path: Path) -> None:
    async def tool_on(url: str | None) -> TimersTool:
        tool = TimersTool(TimersTool.Config())
        tool.attach(ToolHostDouble(tmp_path / "data", reachable=["alice"], database_url=url))
        await tool.start()
        return tool

    alone = await tool_on(None)
    await alone.invoke("set_timer", {"minutes": 9, "label": "パスタ"}, _context())
    await alone.invoke("set_alarm", {"time": "07:00", "days_from_today": 1}, _context())
    await alone.stop()
    shared = await tool_on(postgres_url)
    try:
        listed = await shared.invoke("list_timers", {}, _context())
        assert [t["kind"] for t in listed["timers"]] == ["timer", "alarm"]
        assert not (tmp_path / "data" / "timers.json").exists()
        assert (tmp_path / "data" / "timers.json.moved").exists()
    finally:
        await shared.stop()
    again = await tool_on(postgres_url)   # started again: nothing moves twice
    try:
        assert len((await again.invoke("list_timers", {}, _context()))["timers"]) == 2
    finally:
        await again.stop()


class SlowHost(ToolHostDouble):
    """A worker whose announcement takes as long as the test wants (longer than any
    lease): it finishes once :attr:`go` is set."""

    def __init__(self, data_dir: Path, **options: Any) -> None:
        super().__init__(data_dir, **options)
        self.saying = asyncio.Event()
        self.go = asyncio.Event()

    async def announce(self, user: str, text: str,
                       emotion: Emotion = Emotion.NEUTRAL) -> AnnounceOutcome:
        self.saying.set()
        await self.go.wait()
        return await super().announce(user, text, emotion)


async def test_a_timer_announced_for_longer_than_its_lease_is_said_once(
        workers: Worker) -> None:
    slow = await workers("a", host_cls=SlowHost, lease_seconds=1)
    await slow.invoke("set_timer", {"seconds": 1, "label": "卵"}, _context())
    await _until(slow.host.saying.is_set, "a to take the timer")  # type: ignore[attr-defined]
    other = await workers("b", lease_seconds=1)
    await asyncio.sleep(3.0)   # three leases: the other worker looks fifteen times
    assert _said(other) == []
    slow.host.go.set()  # type: ignore[attr-defined]
    await _until(lambda: len(_said(slow)) == 1, "a to say it")
    await asyncio.sleep(0.6)
    assert _said(slow, other) == ["「卵」の1秒のタイマーが終わったよ！"]
