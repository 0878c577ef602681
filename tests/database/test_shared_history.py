"""The short-term history on the shared database: a person's turns may land on different
workers, and the next turn on worker B continues the exchange said on worker A (issue 30).

Each history here is another worker: its own pool on the test's throwaway PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from omoide.pipeline.history import ConversationHistory
from omoide.pipeline.postgres_history import PostgresHistory, history_for
from omoide.types import Exchange

T0 = datetime(2026, 12, 2, 2, 0, tzinfo=UTC)
WINDOW = timedelta(minutes=10)


def _ex(i: int, user: str = "alice", minutes: float = 0) -> Exchange:
    return Exchange(f"e{i}", user, f"質問{i}", f"答え{i}", T0 + timedelta(minutes=minutes),
                    session_id="s1")


@pytest.fixture
def worker(postgres_url: str) -> Iterator[Callable[..., PostgresHistory]]:
    opened: list[PostgresHistory] = []

    def make(keep: int = 3) -> PostgresHistory:
        history = PostgresHistory(postgres_url, keep, WINDOW)
        opened.append(history)
        return history

    yield make
    for history in opened:
        history.close()


def test_an_exchange_added_on_one_worker_is_recent_on_another(worker) -> None:
    a, b = worker(), worker()
    a.add(_ex(0))
    assert b.recent("alice", T0 + timedelta(minutes=1)) == [_ex(0)]
    b.add(_ex(1, minutes=1))   # the person's next turn lands on B, the one after on A
    assert [e.id for e in a.recent("alice", T0 + timedelta(minutes=2))] == ["e0", "e1"]


def test_older_than_the_window_is_not_recent_on_any_worker(worker) -> None:
    a, b = worker(), worker()
    a.add(_ex(0))
    assert b.recent("alice", T0 + timedelta(minutes=9, seconds=59))
    assert b.recent("alice", T0 + WINDOW) == []
    assert a.recent("alice", T0 + WINDOW) == []


def test_only_the_last_keep_exchanges_are_stored(worker, postgres_url: str) -> None:
    import psycopg

    a, b = worker(keep=3), worker(keep=3)
    for i in range(5):
        (a if i % 2 else b).add(_ex(i, minutes=i))
    a.add(_ex(9, user="bob"))
    assert [e.id for e in b.recent("alice", T0 + timedelta(minutes=5))] == ["e2", "e3", "e4"]
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT person, count(*) FROM short_term_history"
                            " GROUP BY person ORDER BY person").fetchall()
    assert rows == [("alice", 3), ("bob", 1)]   # older rows are deleted, not only hidden


def test_people_have_separate_histories(worker) -> None:
    a, b = worker(), worker()
    a.add(_ex(0, user="alice"))
    assert b.recent("bob", T0) == []
    assert len(b.recent("alice", T0)) == 1


def test_erasing_a_person_clears_their_history_on_every_worker(worker) -> None:
    a, b = worker(), worker()
    a.add(_ex(0))
    a.add(_ex(1, user="bob"))
    assert b.erase("alice") == 1
    assert a.recent("alice", T0) == []
    assert b.recent("alice", T0) == []
    assert [e.id for e in a.recent("bob", T0)] == ["e1"]


def test_zero_exchanges_keeps_nothing(worker) -> None:
    a, b = worker(keep=0), worker(keep=0)
    a.add(_ex(0))
    assert b.recent("alice", T0) == []


def test_an_unreachable_database_falls_back_to_the_workers_own(free_port_url: str) -> None:
    history = PostgresHistory(free_port_url, 3, WINDOW, timeout_s=0.5)
    history.add(_ex(0))   # not shared, logged; the turn is not failed
    assert history.recent("alice", T0) == [_ex(0)]
    history.close()


def test_the_database_url_chooses_the_shared_history(postgres_url: str) -> None:
    local = ConversationHistory(4, timedelta(minutes=5))
    assert history_for(local, None) is local
    shared = history_for(local, postgres_url)
    assert isinstance(shared, PostgresHistory)
    assert (shared.keep, shared.window) == (4, timedelta(minutes=5))
    shared.close()


@pytest.fixture
def free_port_url() -> str:
    from tests.database.conftest import free_port

    return f"postgresql://omoide@127.0.0.1:{free_port()}/nothing"


def test_erasing_a_person_clears_the_in_memory_history_too() -> None:
    history = ConversationHistory(3, WINDOW)
    history.add(_ex(0))
    history.add(_ex(1, user="bob"))
    assert history.erase("alice") == 1
    assert history.recent("alice", T0) == []
    assert len(history.recent("bob", T0)) == 1


APP_CONFIG = """
server: {{data_dir: {data}}}
database: {{url: {url}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake, reply: "[happy] いいね。"}}
tts: {{use: fake}}
"""


def test_a_persons_next_turn_on_another_worker_continues_the_conversation(
        postgres_url: str, tmp_path: Path) -> None:
    """Two servers (as two workers) on one database: the turn on B is prompted with
    the exchange said on A a moment ago."""
    import time

    from fastapi.testclient import TestClient

    from omoide.config import load_yaml, validate_config
    from omoide.plugins import build_registry
    from omoide.server.app import create_app
    from omoide.server.postgres_tokens import PostgresTokenStore
    from omoide.testing.auth import BASE_URL
    from omoide.testing.doubles import MemoryServiceDouble

    def client(name: str) -> Any:
        registry = build_registry([("asr", "fake"), ("memory_engine", "robust")])
        settings = validate_config(load_yaml(APP_CONFIG.format(
            data=tmp_path / name, url=postgres_url)), registry=registry, environ={})
        app = create_app(settings, registry, memory=MemoryServiceDouble())
        tokens = PostgresTokenStore(postgres_url)   # the database's admin token, for all
        admin = tokens.admin_token()
        tokens.close()
        return TestClient(app, base_url=BASE_URL, headers={"Authorization": f"Bearer {admin}"})

    with client("a") as a, client("b") as b:
        for c in (a, b):
            deadline = time.monotonic() + 60   # a bound on a busy machine, not a measure
            while c.get("/healthz").json()["status"] == "starting":
                assert time.monotonic() < deadline
                time.sleep(0.05)
        said = a.post("/v1/turns", json={"user": "mika", "text": "週末は箱根に行くよ"})
        assert said.status_code == 200, said.text
        assert b.post("/v1/turns", json={"user": "mika", "text": "温泉も楽しみ"}
                      ).status_code == 200
        chat = b.app.state.omoide.runtime.chat
        prompt = [(m.role, m.content) for m in chat.requests[-1][1:]]
        assert prompt == [("user", "週末は箱根に行くよ"), ("assistant", "いいね。"),
                          ("user", "温泉も楽しみ")]


async def test_a_turn_waiting_for_the_shared_history_leaves_the_event_loop_serving(
        worker) -> None:
    """A read or an add stuck on a locked table waits in a thread: the loop turns."""
    import asyncio

    import psycopg

    history = worker()
    await history.add_async(_ex(0))
    with psycopg.connect(history.url) as locker, \
            psycopg.connect(history.url, autocommit=True) as watcher:
        locker.execute("SET idle_in_transaction_session_timeout = '20s'")
        locker.execute("LOCK TABLE short_term_history IN ACCESS EXCLUSIVE MODE")
        reading = asyncio.create_task(history.recent_async("alice", T0))
        adding = asyncio.create_task(history.add_async(_ex(1)))
        for _ in range(400):   # until both wait for the lock (a bound, not a measure)
            row = await asyncio.to_thread(lambda: watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchone())
            if row and row[0] >= 2:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the history never waited for the lock")
        ticks = [await asyncio.sleep(0, i) for i in range(3)]   # the loop turns
        assert ticks == [0, 1, 2] and not reading.done() and not adding.done()
        locker.rollback()
    await adding
    assert [e.id for e in await reading] in (["e0"], ["e0", "e1"])
    assert [e.id for e in await history.recent_async("alice", T0)] == ["e0", "e1"]
