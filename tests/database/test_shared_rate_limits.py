"""Rate limits shared by workers: with the tokens on PostgreSQL the sign-in limits are
counted in the database, so a client spreading its attempts over two app instances (two
workers) meets the same limit as on one; with the data dir's token files they stay in
the process (unchanged). The shared counter is a sliding window over two fixed ones."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from omoide.server.postgres_tokens import PostgresTokenStore, session_store, token_store
from omoide.server.session_routes import session_router
from omoide.server.shared_limits import SharedCounters
from omoide.server.tokens import TokenStorage


def _app(tokens: TokenStorage, *, per_source: int = 3, per_token: int = 2) -> TestClient:
    """One worker's sign-in routes (every TestClient request comes from one address)."""
    app = FastAPI()
    app.include_router(session_router(tokens, session_store(tokens, 3600.0),
                                      per_source=per_source, per_token=per_token))
    return TestClient(app)


@pytest.fixture
def stores(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
           ) -> Iterator[list[TokenStorage]]:
    """Two workers' token stores: each its own data dir, or one database."""
    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    opened = [token_store(tmp_path / name, url) for name in ("a", "b")]
    yield opened
    for tokens in opened:
        tokens.close()


def test_sign_in_attempts_from_one_address_are_limited(stores: list[TokenStorage]) -> None:
    worker = _app(stores[0])
    codes = [worker.post("/v1/session", json={"token": "omoide_admin_nope"}).status_code
             for _ in range(4)]
    assert codes == [401, 401, 401, 429]


def test_sign_ins_spread_over_two_workers_meet_one_limit_with_a_shared_database(
        stores: list[TokenStorage], backend: str) -> None:
    a, b = _app(stores[0]), _app(stores[1])
    codes = [w.post("/v1/session", json={"token": "omoide_admin_nope"}).status_code
             for w in (a, b, a, b, a, b)]
    if backend == "postgresql":
        assert codes == [401, 401, 401, 429, 429, 429]
        refused = b.post("/v1/session", json={"token": "omoide_admin_nope"})
        assert 1 <= int(refused.headers["retry-after"]) <= 60
    else:   # each worker counts its own (one worker per data dir)
        assert codes == [401, 401, 401, 401, 401, 401]


def test_one_tokens_sign_ins_count_on_every_worker(stores: list[TokenStorage],
                                                    backend: str) -> None:
    if backend == "sqlite":
        pytest.skip("with the data dir's token files a token belongs to one worker")
    token, _ = stores[0].create_person_token("alice")
    a, b = _app(stores[0], per_source=100), _app(stores[1], per_source=100)
    codes = [w.post("/v1/session", json={"token": token}).status_code for w in (a, b, a)]
    assert codes == [200, 200, 429]


@pytest.fixture
def counters(postgres_url: str) -> Iterator[tuple[SharedCounters, list[float]]]:
    now = [6000.0]   # the start of a window of 60 s
    tokens = PostgresTokenStore(postgres_url)
    yield SharedCounters(tokens.transaction, clock=lambda: now[0]), now
    tokens.close()


def test_a_burst_at_a_window_boundary_gets_no_second_allowance(
        counters: tuple[SharedCounters, list[float]]) -> None:
    shared, now = counters
    window = shared.window("test", 2, 60.0)
    now[0] = 6050.0
    assert [window.hit("x") for _ in range(2)] == [None, None]
    assert window.hit("x") == pytest.approx(10.0)        # the window's end
    now[0] = 6061.0   # a new fixed window, but 59 s of the last one still count
    assert window.hit("x") == pytest.approx(29.0)        # until half of it has passed
    now[0] = 6090.0
    assert window.hit("x") is None
    assert window.hit("y") is None                      # another key counts apart


def test_old_windows_are_swept(counters: tuple[SharedCounters, list[float]],
                               postgres_url: str) -> None:
    shared, now = counters
    window = shared.window("sweep", 5, 60.0)
    for key in ("a", "b", "c"):
        assert window.hit(key) is None
    now[0] += 180.0
    assert window.hit("a") is None
    import psycopg
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT key FROM omoide_rate_limits WHERE scope = 'sweep'"
                            ).fetchall()
    assert rows == [("a",)]


# -- the StackChan plugin's per-source limit on its unauthenticated endpoints --------------
async def _stackchan_worker(folder: Path, url: str, rate: str) -> Any:
    from omoide_device_stackchan.config import StackChanConfig
    from omoide_device_stackchan.device import StackChan
    from omoide_device_stackchan.testing import LiveServer, ScriptedHost

    device = StackChan(StackChanConfig.model_validate({"hello_timeout_s": 1.0,
                                                      "ota_rate_limit": rate}))
    await device.start()
    host = ScriptedHost(folder / "device")
    host.database_url = url   # type: ignore[attr-defined]  # the server's host has it
    server = LiveServer(device, host)
    await server.start()
    return server


async def test_ota_requests_spread_over_two_stackchan_workers_meet_one_limit(
        postgres_url: str, tmp_path: Path) -> None:
    import httpx
    pytest.importorskip("omoide_device_stackchan")
    workers = [await _stackchan_worker(tmp_path / name, postgres_url, "4/minute")
               for name in ("a", "b")]
    try:
        async with httpx.AsyncClient() as client:
            responses = [await client.get(f"{workers[i % 2].url}/xiaozhi/ota/",
                                          headers={"Device-Id": "aa:bb:cc:dd:ee:30",
                                                   "Client-Id": "c"})
                         for i in range(6)]
    finally:
        for server in workers:
            await server.stop()
    assert [r.status_code for r in responses] == [200] * 4 + [429] * 2
    assert 1 <= int(responses[-1].headers["retry-after"]) <= 60


# -- new user ids per source address (server.limits.new_users_per_source) ----------------
def test_new_user_ids_from_one_address_meet_one_limit_over_two_workers(
        backend: str, request: pytest.FixtureRequest) -> None:
    from omoide.server.limits import NewUserLimiter

    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    a, b = (NewUserLimiter.for_database(2, 60.0, url) for _ in range(2))
    try:
        assert a.admit("u1", "10.0.0.1") is None
        assert b.admit("u2", "10.0.0.1") is None
        third = a.admit("u3", "10.0.0.1")
        assert b.admit("u1", "10.0.0.1") is None       # admitted once, known everywhere
        assert b.admit("u5", "10.0.0.2") is None       # another address counts apart
    finally:
        for limiter in (a, b):
            if limiter.shared is not None:
                limiter.shared.close()
    if backend == "postgresql":
        assert third is not None and 1 <= third <= 60
    else:   # each worker counts its own
        assert third is None


def test_new_user_ids_are_counted_in_the_process_while_the_database_is_down() -> None:
    from omoide.server.limits import NewUserLimiter

    down = NewUserLimiter.for_database(1, 60.0, "postgresql://nobody@127.0.0.1:1/none")
    assert down.admit("u1", "10.0.0.1") is None
    assert down.admit("u2", "10.0.0.1") is not None
    assert down.admit("u1", "10.0.0.1") is None


# -- a rate-limit check never holds the event loop -----------------------------------------
@contextlib.contextmanager
def _locked(url: str, table: str) -> Iterator[Callable[[], int]]:
    """``table`` locked by another session until the block ends (the database ends that
    session after 20 s idle, so a test that froze its event loop fails instead of
    hanging); yields how many sessions wait for a lock now."""
    import psycopg
    with psycopg.connect(url) as locker, psycopg.connect(url, autocommit=True) as watcher:
        locker.execute("SET idle_in_transaction_session_timeout = '20s'")
        locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")

        def waiting() -> int:
            row = watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE"
                                  " wait_event_type = 'Lock'").fetchone()
            return int(row[0]) if row else 0

        yield waiting
        locker.rollback()


async def _until_waiting(waiting: Callable[[], int]) -> None:
    """Until a session waits for the lock (the check under test is stuck on it)."""
    for _ in range(400):
        if await asyncio.to_thread(waiting):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no session ever waited for the lock")


async def test_a_sign_in_waiting_for_the_shared_counter_leaves_the_event_loop_serving(
        postgres_url: str, tmp_path: Path) -> None:
    import httpx
    tokens = token_store(tmp_path, postgres_url)
    app = FastAPI()
    app.include_router(session_router(tokens, session_store(tokens, 3600.0), per_source=10))
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://w") as client:
            first = await client.post("/v1/session", json={"token": "omoide_admin_nope"})
            assert first.status_code == 401   # the counters' table exists from here on
            with _locked(postgres_url, "omoide_rate_limits") as waiting:
                signing_in = asyncio.create_task(
                    client.post("/v1/session", json={"token": "omoide_admin_nope"}))
                await _until_waiting(waiting)
                who = await client.get("/v1/session")   # served meanwhile
                assert who.json() == {"signed_in": False}
                assert not signing_in.done()
            assert (await signing_in).status_code == 401   # counted once the lock went
    finally:
        tokens.close()


async def test_a_sign_in_waiting_to_record_its_session_leaves_the_event_loop_serving(
        postgres_url: str, tmp_path: Path) -> None:
    import httpx
    tokens = token_store(tmp_path, postgres_url)
    token, _ = tokens.create_person_token("alice")
    app = FastAPI()
    app.include_router(session_router(tokens, session_store(tokens, 3600.0)))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://w") as client:
            with _locked(postgres_url, "auth_sessions") as waiting:
                signing_in = asyncio.create_task(
                    client.post("/v1/session", json={"token": token}))
                await _until_waiting(waiting)
                assert (await client.get("/v1/session")).json() == {"signed_in": False}
                assert not signing_in.done()
            signed_in = await signing_in
            assert signed_in.status_code == 200 and signed_in.json()["user"] == "alice"
    finally:
        tokens.close()


async def test_a_new_person_checked_against_a_locked_database_leaves_the_loop_serving(
        postgres_url: str) -> None:
    from omoide.server.limits import NewUserLimiter

    limiter = NewUserLimiter.for_database(5, 60.0, postgres_url)
    assert limiter.shared is not None
    try:
        assert await limiter.admit_async("u1", "10.0.0.1") is None
        with _locked(postgres_url, "omoide_admitted_users") as waiting:
            admitting = asyncio.create_task(limiter.admit_async("u2", "10.0.0.1"))
            await _until_waiting(waiting)
            # the loop runs other work meanwhile, and a known person is not held up
            assert await limiter.admit_async("u1", "10.0.0.1") is None
            assert not admitting.done()
        assert await admitting is None
        assert limiter.is_known("u2")
    finally:
        limiter.shared.close()


async def test_a_stackchan_rate_check_on_a_locked_database_leaves_the_loop_serving(
        postgres_url: str) -> None:
    pytest.importorskip("omoide_device_stackchan")
    from omoide_device_stackchan.ratelimit import SourceRateLimiter

    limiter = SourceRateLimiter("2/minute", database_url=postgres_url)
    try:
        assert await limiter.refusal("10.0.0.9") is None
        with _locked(postgres_url, "omoide_rate_limits") as waiting:
            asking = asyncio.create_task(limiter.refusal("10.0.0.9"))
            await _until_waiting(waiting)
            ticks = [await asyncio.sleep(0, i) for i in range(3)]   # the loop turns
            assert ticks == [0, 1, 2] and not asking.done()
        assert await asking is None
        wait = await limiter.refusal("10.0.0.9")
        assert wait is not None and 1 <= wait <= 60
    finally:
        limiter.close()
