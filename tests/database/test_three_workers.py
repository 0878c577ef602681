"""Three ``omoide serve`` workers on one PostgreSQL and one Chroma server (issue 30, part 4).

Real processes, each with its own data dir, on a throwaway PostgreSQL cluster of this
module's own (one test stops and starts it) and a `chroma run` server; every request
carries the admin token (kept in the database). What is specified:

- text turns (``POST /v1/turns``) of several people spread over the three workers are
  each journaled once;
- a memory said on worker A is recalled on B and on C (their indexes built before);
- a worker SIGKILLed while it runs a turn: the other workers carry on, every answered
  turn is journaled exactly once, the killed turn at most once; the worker restarted on
  the same data dir serves again, and extraction consumes every exchange (a lease the
  dead worker held expires and another worker takes the work);
- PostgreSQL stopped and started again mid-load: turns answer meanwhile and say what
  failed, then turns recover without restarting omoide, and what was said during the
  outage is journaled once it is back. These turns come without a token (the workers
  exempt this machine, ``loopback_exempt``): a token is checked in the database, and a
  request with one while the database is down is not answered yet (the last test,
  expected to fail until the token check degrades too).

The counts each test saw are printed (``-s``). Bounds on waits are generous for a busy
machine and are not measures (``omoide bench workers`` measures).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from omoide.server.postgres_tokens import PostgresTokenStore
from omoide.testing.postgresql import SKIP_ENV, PostgresUnavailable, ThrowawayPostgres

chroma = pytest.importorskip("omoide_store_chroma")
from omoide_store_chroma.local_server import (  # noqa: E402
    LocalChromaServer,
    chroma_command,
    free_port,
)

pytestmark = pytest.mark.slow

CONFIG = """
assistant: {{name: かな, timezone: Asia/Tokyo}}
server: {{data_dir: {data}, host: 127.0.0.1, port: {port},
         auth: {{loopback_exempt: true}}}}
database: {{url: {{$env: OMOIDE_DATABASE_URL}}, lease_seconds: 5}}
memory: {{engine: robust, index: {{refresh_s: 3600}}, extraction: {{max_exchanges: 1}}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: chroma, host: 127.0.0.1, port: {chroma_port}}}
chat: {{use: standin{slow}}}
tts: {{use: fake}}
"""
NOW = "2026-12-01T20:00:00+09:00"
WAIT_S = 90.0
KILLS = int(os.environ.get("OMOIDE_TEST_TURN_KILLS", "2"))
"""How many times worker C is killed mid-turn (more for a measure: each kill and restart
takes tens of seconds here)."""
"""A bound on a busy machine, not a measure."""
SLOW_REPLY = ", chunk_chars: 1, piece_delay_ms: 150"
"""Worker C, the one killed, streams its replies a character every 150 ms: a turn there
lasts seconds, so a kill lands inside it."""


@dataclass
class Worker:
    """One ``omoide serve`` process on its own data dir and port."""

    name: str
    config: Path
    port: int
    database_url: str
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "omoide.cli", "serve", "--config", str(self.config)],
                stdout=subprocess.DEVNULL, stderr=log,
                env={**os.environ, "OMOIDE_DATABASE_URL": self.database_url})

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, self.tail()
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).json()["status"] == "ready":
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.3)
        raise AssertionError(f"{self.name} did not become ready: {self.tail()}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


@dataclass
class Cluster:
    database: ThrowawayPostgres
    url: str
    workers: list[Worker]
    client: httpx.Client

    def journal(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def journaled(self, texts: list[str]) -> Counter[str]:
        """How many journal rows hold each of ``texts`` (as said)."""
        rows = self.journal("SELECT user_text FROM exchanges WHERE user_text = ANY(%s)",
                            (texts,))
        return Counter(r[0] for r in rows)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if chroma_command() is None:
        pytest.fail("the `chroma` command (from the chromadb package) is not installed")
    root = tmp_path_factory.mktemp("three_workers")
    try:
        database = ThrowawayPostgres().start()
    except PostgresUnavailable as exc:
        if os.environ.get(SKIP_ENV) == "1":
            pytest.skip(f"PostgreSQL tests skipped ({SKIP_ENV}=1): {exc}")
        pytest.fail(f"the throwaway PostgreSQL did not start: {exc}", pytrace=False)
    workers: list[Worker] = []
    try:
        url = database.create_database("three_workers")
        with LocalChromaServer(root / "chroma") as store:
            for name in "ABC":
                port = free_port()
                config = root / f"worker{name}.yaml"
                config.write_text(CONFIG.format(
                    data=root / f"data{name}", port=port, chroma_port=store.port,
                    slow=SLOW_REPLY if name == "C" else ""), encoding="utf-8")
                workers.append(Worker(name, config, port, url, root / f"worker{name}.log"))
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.wait_ready()
            tokens = PostgresTokenStore(url)
            admin = tokens.admin_token()
            tokens.close()
            with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {admin}"},
                              ) as client:
                yield Cluster(database, url, workers, client)
    finally:
        for worker in workers:
            worker.stop()
        database.stop()


def turn(cluster: Cluster, worker: Worker, user: str, text: str) -> dict[str, Any]:
    r = cluster.client.post(f"{worker.base}/v1/turns",
                            json={"user": user, "text": text, "now": NOW})
    assert r.status_code == 200, f"{worker.name}: {r.status_code} {r.text[:500]}"
    body: dict[str, Any] = r.json()
    return body


def until(check: Callable[[], bool], wait_s: float = WAIT_S) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_turns_of_several_people_spread_over_three_workers_are_each_journaled_once(
        cluster: Cluster) -> None:
    people = ["aoi", "ren", "sora", "yui"]
    plan = [(cluster.workers[(p + n) % 3], person, f"{person}の話その{n}です。")
            for p, person in enumerate(people) for n in range(3)]
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda t: turn(cluster, *t), plan))
    assert all(a["reply"] for a in answers)
    # a person's first turn on a worker may say its index is still being built; none
    # says journaling failed
    assert [n for a in answers for n in a["degraded"] if "journal" in n] == []
    texts = [text for _, _, text in plan]
    assert cluster.journaled(texts) == Counter(texts)
    journaled_people = {r[0] for r in cluster.journal('SELECT "user" FROM users')}
    assert set(people) <= journaled_people
    [(connections,)] = cluster.journal(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
    print(f"\nspread: {len(plan)} turns of {len(people)} people over 3 workers,"
          f" {sum(cluster.journaled(texts).values())} journal rows; {connections}"
          " connections to the database (this one included)")


def test_a_memory_said_on_worker_a_is_recalled_on_b_and_c(cluster: Cluster) -> None:
    a, b, c = cluster.workers
    asked = "箱根の予定って覚えてる?"

    def recalled(worker: Worker) -> bool:
        body = turn(cluster, worker, "mika", asked)
        return any("箱根" in m["text"] for m in [*body["memories"], *body["profile"]])

    assert not recalled(b) and not recalled(c)  # their indexes of mika are built now
    said_at = time.monotonic()
    turn(cluster, a, "mika", "来週の土曜日に友達と箱根に行くんだ。")
    assert until(lambda: recalled(b))
    on_b = time.monotonic() - said_at
    assert until(lambda: recalled(c))
    print(f"\nrecall: said on A, recalled on B after {on_b:.1f} s (extraction included)")


def test_a_worker_killed_during_a_turn_loses_nothing_and_journals_nothing_twice(
        cluster: Cluster) -> None:
    a, b, c = cluster.workers
    people = ["haru", "nao"]
    answered: list[str] = []
    killed: list[str] = []
    stop = threading.Event()

    def load() -> None:  # the other workers' turns go on throughout
        n = 0
        while not stop.is_set():
            text = f"{people[n % 2]}の続きの話その{n}です。"
            turn(cluster, (a, b)[n % 2], people[n % 2], text)
            answered.append(text)
            n += 1
            stop.wait(0.5)  # a steady load the extraction keeps up with

    with ThreadPoolExecutor(2) as pool:
        carried_on = pool.submit(load)
        try:
            while len(killed) < KILLS:
                text = f"{people[len(killed) % 2]}がCで話している途中その{len(killed)}です。"
                in_flight = pool.submit(turn, cluster, c, people[len(killed) % 2], text)
                time.sleep(0.8)  # C's reply streams for seconds
                if in_flight.done():  # answered already: not a kill during a turn
                    in_flight.result()
                    answered.append(text)
                    continue
                c.kill()
                with pytest.raises(httpx.TransportError):
                    in_flight.result(timeout=60)
                killed.append(text)
                c.start()  # on the same data dir, as a supervisor would
                c.wait_ready()
            after = f"{people[0]}が戻ったCで話すその後の話です。"
            turn(cluster, c, people[0], after)
        finally:
            stop.set()
        carried_on.result(timeout=120)
    answered.append(after)
    assert len(answered) > len(killed)
    assert cluster.journaled(answered) == Counter(answered)  # nothing lost or twice
    assert all(n <= 1 for n in cluster.journaled(killed).values())

    time.sleep(6)  # past the lease (5 s) a killed worker may have held
    for person in people:  # a turn starts an extraction run for its person
        turn(cluster, a, person, f"{person}、ほかに何かある?")

    def everything_extracted() -> bool:
        [(waiting,)] = cluster.journal(
            'SELECT count(*) FROM exchanges WHERE "user" = ANY(%s) AND consumed_at IS NULL'
            " AND quarantined_at IS NULL AND skipped_at IS NULL", (people,))
        return bool(waiting == 0)

    assert until(everything_extracted), cluster.journal(
        'SELECT "user", user_text, lease_owner, lease_until, attempts, last_error, batch_id'
        ' FROM exchanges WHERE "user" = ANY(%s) AND consumed_at IS NULL', (people,))
    [(open_batches,)] = cluster.journal(
        "SELECT count(*) FROM extraction_batches WHERE \"user\" = ANY(%s) AND state <> 'done'",
        (people,))
    assert open_batches == 0
    print(f"\nkill: {len(killed)} kills of C mid-turn, {len(answered)} turns answered by"
          f" the workers, journaled {sum(cluster.journaled(answered).values())};"
          f" killed turns journaled {sum(cluster.journaled(killed).values())}")


def test_a_database_restart_mid_load_degrades_turns_then_they_recover_without_restart(
        cluster: Cluster) -> None:
    outcomes: list[tuple[str, int, list[str], str]] = []
    stop = threading.Event()

    def load(worker: Worker) -> None:
        n = 0
        while not stop.is_set():
            text = f"rinが{worker.name}で停電中に話すその{n}です。"
            try:
                r = httpx.post(f"{worker.base}/v1/turns", timeout=120, json={
                    "user": "rin", "text": text, "now": NOW})  # no token: loopback
            except httpx.TransportError as exc:
                outcomes.append((text, 0, [], repr(exc)))
            else:
                body = r.json() if r.headers.get("content-type", "").startswith(
                    "application/json") else {}
                outcomes.append((text, r.status_code, body.get("degraded") or [],
                                 r.text[:300]))
            n += 1

    with ThreadPoolExecutor(3) as pool:
        running = [pool.submit(load, w) for w in cluster.workers]
        try:
            until(lambda: len(outcomes) >= 3)
            cluster.database.pause()
            paused_at = len(outcomes)
            until(lambda: len(outcomes) >= paused_at + 6)
            health = [httpx.get(f"{w.base}/healthz", timeout=30) for w in cluster.workers]
            cluster.database.resume()
            resumed_at = len(outcomes)

            def recovered() -> bool:
                return any(code == 200 and "journal" not in " ".join(degraded)
                           for _, code, degraded, _ in outcomes[resumed_at:])

            came_back = until(recovered)
        finally:
            stop.set()
        for done in running:
            done.result(timeout=300)
    assert came_back
    # still in the balancer's pool: serving, and saying what is wrong
    assert [(h.status_code, h.json()["status"]) for h in health] == [(200, "degraded")] * 3
    assert all("journal" in h.json()["components"]["memory"]["reason"] for h in health)
    during = outcomes[paused_at:resumed_at]
    for _, code, degraded, shown in during:
        print(f"during the outage: {code} {degraded or shown!r}")
    assert during and all(code == 200 for _, code, _, _ in during)
    assert any("journal" in " ".join(degraded) for _, _, degraded, _ in during)
    answered = [text for text, code, _, _ in outcomes if code == 200]
    assert until(lambda: cluster.journaled(answered) == Counter(answered))
    print(f"\nrestart: {len(outcomes)} turns, {len(during)} during the outage"
          f" ({sum(1 for _, _, d, _ in during if d)} degraded), all"
          f" {len(answered)} answered journaled once")


def test_a_turn_with_a_token_while_the_database_is_down_is_answered_or_refused_saying_why(
        cluster: Cluster) -> None:
    a = cluster.workers[0]
    turn(cluster, a, "mio", "mioの最初の話です。")  # the token checked while all is well
    cluster.database.pause()
    answers = []
    try:
        for n in range(2):
            started = time.monotonic()
            r = httpx.post(f"{a.base}/v1/turns", headers=cluster.client.headers, timeout=120,
                           json={"user": "mio", "text": f"mioの停止中の話その{n}です。",
                                 "now": NOW})
            answers.append(r)
            print(f"\na token during the outage: {r.status_code} after"
                  f" {time.monotonic() - started:.1f} s: {r.text[:200]}")
    finally:
        cluster.database.resume()
    for r in answers:
        assert r.status_code in (200, 503), r.text[:300]
        assert r.status_code == 200 or "database" in r.json()["error"]
    # and once the database is back, the same token opens the worker again (no restart)
    assert until(lambda: httpx.post(
        f"{a.base}/v1/turns", headers=cluster.client.headers, timeout=60,
        json={"user": "mio", "text": "mioの再開後の話です。", "now": NOW}).status_code == 200)
