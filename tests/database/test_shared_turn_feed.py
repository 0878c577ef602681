"""The console on one worker sees the turns of every worker (``database.url``), and a
browser signed out on one worker is signed out on all.

Two ``omoide serve`` workers (real processes, their own data dirs) on one throwaway
PostgreSQL database. Text turns are taken by worker B; an admin console and a person's
own page are connected to worker A: ``GET /v1/turns`` on A lists B's turns, A's admin
stream sends them live with the numbers B's ``GET /v1/turns`` shows (a reconnecting
browser's ``Last-Event-ID`` means the same turn on either worker), and the person's
stream on A sends that person's turns only.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

CONFIG = """
server: {{data_dir: {data}, host: 127.0.0.1, port: {port}}}
database: {{url: {{$env: OMOIDE_DATABASE_URL}}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
"""
WAIT_S = 60.0
"""A bound on a busy machine, not a measure."""


class Stream:
    """A browser's ``EventSource`` on one route, read in a thread until it has
    ``wanted`` events (the turns' JSON, with the event ids)."""

    def __init__(self, url: str, headers: dict[str, str], wanted: int) -> None:
        self.turns: list[dict[str, Any]] = []
        self.ids: list[int] = []
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(url, headers, wanted),
                                        daemon=True)
        self._thread.start()

    def _read(self, url: str, headers: dict[str, str], wanted: int) -> None:
        try:
            with httpx.stream("GET", url, headers=headers, timeout=None) as r:
                assert r.status_code == 200, r.read()
                for line in r.iter_lines():
                    if line.startswith("id:"):
                        self.ids.append(int(line[3:].strip()))
                    elif line.startswith("data:"):
                        self.turns.append(json.loads(line[5:].strip()))
                        if len(self.turns) >= wanted:
                            return
        finally:
            self.done.set()

    def wait(self) -> list[dict[str, Any]]:
        assert self.done.wait(WAIT_S), f"the stream sent {len(self.turns)} turns only"
        return self.turns


def omoide(*args: str, url: str) -> str:
    done = subprocess.run([sys.executable, "-m", "omoide.cli", *args], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "OMOIDE_DATABASE_URL": url})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def workers(omoide_workers: Any, postgres_url: str) -> Iterator[tuple[str, str, str, str]]:
    """(worker A, worker B, the admin token, a person token of mika's)."""
    with omoide_workers(2, lambda data, port: CONFIG.format(data=data, port=port)) as served:
        made = omoide("token", "create", "--config", str(served.configs[0]),
                      "--user", "mika", url=postgres_url)
        mika = next(w for w in made.split() if w.startswith("omoide_user_"))
        yield served.urls[0], served.urls[1], served.admin, mika


def turn(base: str, admin: str, user: str, text: str) -> None:
    r = httpx.post(f"{base}/v1/turns", json={"user": user, "text": text},
                   headers={"Authorization": f"Bearer {admin}"}, timeout=WAIT_S)
    assert r.status_code == 200, r.text


@pytest.mark.slow
def test_a_console_on_one_worker_sees_the_turns_taken_on_another(
        workers: tuple[str, str, str, str]) -> None:
    a, b, admin, mika = workers
    as_admin = {"Authorization": f"Bearer {admin}"}
    everyone = Stream(f"{a}/v1/turns/events", as_admin, wanted=3)
    own = Stream(f"{a}/v1/users/mika/turns/events", {"Authorization": f"Bearer {mika}"},
                 wanted=2)
    turn(b, admin, "mika", "週末は箱根に行くよ")
    turn(b, admin, "ren", "明日は雨かな")
    turn(b, admin, "mika", "温泉も楽しみ")

    said = [(t["user"], t["transcript"]) for t in everyone.wait()]
    assert said == [("mika", "週末は箱根に行くよ"), ("ren", "明日は雨かな"),
                    ("mika", "温泉も楽しみ")]
    # mika's second turn came after ren's: had ren's been sent, it would be here
    assert [(t["user"], t["transcript"]) for t in own.wait()] == [
        ("mika", "週末は箱根に行くよ"), ("mika", "温泉も楽しみ")]

    listed_a = httpx.get(f"{a}/v1/turns", headers=as_admin, timeout=WAIT_S).json()["turns"]
    listed_b = httpx.get(f"{b}/v1/turns", headers=as_admin, timeout=WAIT_S).json()["turns"]
    assert listed_a == listed_b
    assert [(t["user"], t["transcript"]) for t in listed_a] == said
    assert everyone.ids == [t["seq"] for t in listed_a]
    assert everyone.ids == sorted(everyone.ids)
    assert [t["reply"] for t in listed_a] == [t["reply"] for t in everyone.turns]
    ren = httpx.get(f"{a}/v1/turns", params={"user": "ren"}, headers=as_admin,
                    timeout=WAIT_S).json()["turns"]
    assert [t["transcript"] for t in ren] == ["明日は雨かな"]

    # a browser reconnecting to B after the first event misses nothing and repeats nothing
    again = Stream(f"{b}/v1/turns/events",
                   {**as_admin, "Last-Event-ID": str(everyone.ids[0])}, wanted=2)
    assert [t["transcript"] for t in again.wait()] == ["明日は雨かな", "温泉も楽しみ"]
    assert again.ids == everyone.ids[1:]


@pytest.mark.slow
def test_a_browser_signed_out_on_one_worker_is_signed_out_on_every_worker(
        workers: tuple[str, str, str, str]) -> None:
    a, b, _, mika = workers
    signed = httpx.post(f"{a}/v1/session", json={"token": mika}, timeout=WAIT_S)
    assert signed.status_code == 200, signed.text
    cookie = {"Cookie": f"omoide_session={signed.cookies['omoide_session']}"}
    who = httpx.get(f"{b}/v1/session", headers=cookie, timeout=WAIT_S).json()
    assert (who["signed_in"], who.get("user")) == (True, "mika")
    out = httpx.delete(f"{a}/v1/session", headers={**cookie, "Origin": a}, timeout=WAIT_S)
    assert out.status_code == 200, out.text
    assert out.json() == {"signed_in": False, "ended": True}

    assert httpx.get(f"{b}/v1/session", headers=cookie, timeout=WAIT_S).json() == {
        "signed_in": False}
    refused = httpx.get(f"{b}/v1/users/mika/turns", headers=cookie, timeout=WAIT_S)
    assert refused.status_code == 401, refused.text
    # the token itself still works: signing out ends the browser's session only
    assert httpx.get(f"{b}/v1/users/mika/turns", headers={"Authorization": f"Bearer {mika}"},
                     timeout=WAIT_S).status_code == 200


# -- the table itself (one feed in this process) -------------------------------------------
def _said(person: str, n: int) -> dict[str, Any]:
    return {"turn_id": f"t-{person}-{n}", "user": person, "transcript": f"{n}", "reply": ""}


async def test_the_table_keeps_a_bounded_number_of_each_persons_turns_and_none_too_old(
        postgres_url: str) -> None:
    import psycopg

    from omoide.server.postgres_turns import KEPT_DAYS, KEPT_PER_PERSON, SharedTurnFeed

    feed = SharedTurnFeed(postgres_url)
    later = SharedTurnFeed(postgres_url)     # another worker, turns later
    try:
        for n in range(KEPT_PER_PERSON + 5):
            feed.publish(_said("mika", n))
            await feed.written()
        feed.publish(_said("ren", 0))
        await feed.written()
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("UPDATE recent_turns SET at = now() - make_interval(days => %s)"
                         " WHERE person = 'ren'", (KEPT_DAYS + 1,))
        later.publish(_said("mika", 999))   # a worker prunes the old ones as it starts
        await later.written()

        mika = await feed.recent_turns("mika", KEPT_PER_PERSON + 10)
        assert [t["transcript"] for t in mika] == [
            str(n) for n in range(6, KEPT_PER_PERSON + 5)] + ["999"]
        assert await feed.recent_turns("ren") == []
        numbers = [t["seq"] for t in await feed.recent_turns(None, KEPT_PER_PERSON)]
        assert numbers == sorted(numbers) and len(numbers) == KEPT_PER_PERSON
    finally:
        await feed.close()
        await later.close()


async def test_while_the_database_does_not_answer_a_turn_is_shown_by_its_own_worker(
        ) -> None:
    from omoide.server.postgres_turns import SharedTurnFeed

    feed = SharedTurnFeed(f"postgresql://omoide@127.0.0.1:{_closed_port()}/none",
                          timeout_s=0.5)
    try:
        feed.publish(_said("mika", 1))
        await feed.written()
        feed.publish(_said("mika", 2))   # the database just failed: not asked again
        await feed.written()
        kept = await feed.recent_turns("mika")
        assert [t["transcript"] for t in kept] == ["1", "2"]
        assert kept[0]["seq"] < kept[1]["seq"]
    finally:
        await feed.close()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_worker_listens_only_while_a_console_streams_from_it(postgres_url: str,
                                                                     ) -> None:
    """The live streams' listening connection opens with the first stream and closes
    with the last; a turn published meanwhile reaches the open stream."""
    import psycopg

    from omoide.server.postgres_turns import SharedTurnFeed

    def listening() -> int:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE"
                               " application_name = 'omoide-turn-feed-listen'").fetchone()
            return int(row[0]) if row else 0

    async def until_listening(count: int) -> None:
        for _ in range(400):   # a bound on a busy machine, not a measure
            if await asyncio.to_thread(listening) == count:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"never {count} listening connections")

    feed, other = SharedTurnFeed(postgres_url), SharedTurnFeed(postgres_url)
    try:
        assert await asyncio.to_thread(listening) == 0
        first, second = await feed.open_stream(), await feed.open_stream()
        await until_listening(1)
        other.publish(_said("mika", 1))     # another worker's turn
        turn = await asyncio.wait_for(first.get(), 60)
        assert turn is not None and turn["transcript"] == "1"
        assert (await asyncio.wait_for(second.get(), 60)) == turn
        feed.unsubscribe(first)
        feed.unsubscribe(second)
        await until_listening(0)
    finally:
        await feed.close()
        await other.close()
