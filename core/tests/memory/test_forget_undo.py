"""Forgetting with an undo window: nothing lost, nothing back by accident."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from omoide.memory.control.forget_undo import ForgetWithUndo
from omoide.types import Memory

TZ_NOW = datetime.fromisoformat("2026-03-01T20:00:00+09:00")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def setup(make_engine: Any, tmp_path: Path) -> Any:
    engine = await make_engine()
    await engine.add_memories("alice", [
        Memory("m1", "alice", "あなたは紅茶が好きだ。", TZ_NOW, kind="preference",
               source_exchange_ids=("x1",)),
        Memory("m2", "alice", "あなたは猫を飼っている。", TZ_NOW)])
    clock = Clock()
    undo = ForgetWithUndo(engine, tmp_path / "forgotten.sqlite3", window_s=30, clock=clock)
    yield engine, undo, clock
    undo.close()


async def test_a_forgotten_memory_is_restored_whole_within_the_window(setup: Any) -> None:
    engine, undo, clock = setup
    ticket = await undo.forget("alice", "m1")
    assert ticket is not None and await engine.get("alice", "m1") is None
    clock.now += 29
    outcome, _ = await undo.restore("alice", ticket.ticket)
    back = await engine.get("alice", "m1")
    assert outcome == "restored"
    assert (back.text, back.kind, back.created_at, back.source_exchange_ids) == (
        "あなたは紅茶が好きだ。", "preference", TZ_NOW, ("x1",))


async def test_after_the_window_the_memory_stays_forgotten(setup: Any) -> None:
    engine, undo, clock = setup
    ticket = await undo.forget("alice", "m1")
    clock.now += 31
    assert (await undo.restore("alice", ticket.ticket))[0] == "expired"
    assert await engine.get("alice", "m1") is None


async def test_the_held_copy_is_deleted_once_the_window_has_passed(setup: Any) -> None:
    _, undo, clock = setup
    await undo.forget("alice", "m1")
    clock.now += 31
    assert await undo.purge_expired() == 1
    assert undo._run("SELECT COUNT(*) FROM forgotten") == [(0,)]


async def test_a_ticket_restores_once(setup: Any) -> None:
    engine, undo, _ = setup
    ticket = await undo.forget("alice", "m1")
    await undo.restore("alice", ticket.ticket)
    await engine.forget("alice", "m1")          # forgotten again, for good this time
    assert (await undo.restore("alice", ticket.ticket))[0] == "unknown"
    assert await engine.get("alice", "m1") is None


async def test_another_persons_ticket_restores_nothing(setup: Any) -> None:
    engine, undo, _ = setup
    ticket = await undo.forget("alice", "m1")
    assert (await undo.restore("bob", ticket.ticket))[0] == "unknown"
    assert await engine.list_memories("bob") == []


async def test_a_memory_back_by_other_means_is_not_overwritten(setup: Any) -> None:
    engine, undo, _ = setup
    ticket = await undo.forget("alice", "m1")
    await engine.add_memories("alice", [Memory("m1", "alice", "あなたは緑茶が好きだ。", TZ_NOW)])
    outcome, _ = await undo.restore("alice", ticket.ticket)
    assert outcome == "already_there"
    assert (await engine.get("alice", "m1")).text == "あなたは緑茶が好きだ。"


async def test_a_failing_delete_keeps_the_memory_and_leaves_no_ticket(
        setup: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    engine, undo, _ = setup

    async def broken(user: str, memory_id: str) -> bool:
        raise RuntimeError("store is down")
    monkeypatch.setattr(engine, "forget", broken)
    with pytest.raises(RuntimeError):
        await undo.forget("alice", "m1")
    assert await engine.get("alice", "m1") is not None
    assert await undo.pending("alice") == []


async def test_tickets_survive_a_restart_of_the_server(setup: Any, tmp_path: Path) -> None:
    engine, undo, clock = setup
    ticket = await undo.forget("alice", "m2")
    undo.close()
    again = ForgetWithUndo(engine, undo.path, window_s=30, clock=clock)
    try:
        assert [t.ticket for t in await again.pending("alice")] == [ticket.ticket]
        assert (await again.restore("alice", ticket.ticket))[0] == "restored"
    finally:
        again.close()
    assert await engine.get("alice", "m2") is not None


async def test_an_unknown_memory_gives_no_ticket(setup: Any) -> None:
    _, undo, _ = setup
    assert await undo.forget("alice", "nope") is None
