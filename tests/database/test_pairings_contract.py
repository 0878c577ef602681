"""Contract: StackChan pairings and pending activation codes answer alike in the data
dir's file and in PostgreSQL, and two stores opened on the same place (two workers, or
a worker and ``omoide devices``) see each other's changes.

Each test runs on ``files`` (``pairings.json`` in one data dir) and on ``postgresql``
(the shared database: two stores are two workers, each with its own pool). What only the
database has, the token secret shared by every worker, is tested on its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("omoide_device_stackchan")

from omoide_device_stackchan.pairing import (
    ActivationState,
    DeviceInfo,
    PairingStore,
    PendingPoolFull,
    UnknownCode,
)
from omoide_device_stackchan.service import pairing_store_for
from omoide_device_stackchan.shared_pairing import RECENT_S, PostgresPairingStore

ROBOT = "aa:bb:cc:00:00:01"
CLIENT = "7b1e4c3a-0000-4000-8000-000000000001"


@pytest.fixture(params=["files", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """None: the data dir's files; else the database URL."""
    if request.param == "files":
        return None
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def stores(where: str | None, tmp_path: Path) -> Iterator[Callable[..., PairingStore]]:
    """Opens pairing stores on one place: each call is another worker."""
    opened: list[PairingStore] = []

    def make(**limits: Any) -> PairingStore:
        store = pairing_store_for(tmp_path / "devices" / "stackchan", None, where)
        for name, value in limits.items():
            setattr(store, name, value)
        opened.append(store)
        return store

    yield make
    for store in opened:
        if isinstance(store, PostgresPairingStore):
            store.close()


def test_the_store_follows_the_configuration(where: str | None,
                                             stores: Callable[..., PairingStore]) -> None:
    store = stores()
    assert isinstance(store, PostgresPairingStore) == (where is not None)


def test_a_code_shown_by_one_worker_is_confirmed_on_another_and_the_robot_is_activated(
        stores: Callable[..., PairingStore]) -> None:
    a, b = stores(), stores()
    pending = a.request_activation(ROBOT, CLIENT, source="10.0.0.5",
                                   info=DeviceInfo(serial_number="SN-1"))
    assert [p.code for p in b.pending()] == [pending.code]
    assert b.waiting(ROBOT, CLIENT) == pending
    assert a.request_activation(ROBOT, CLIENT).code == pending.code  # asked again: same
    assert b.record_activation(ROBOT, CLIENT, challenge=pending.challenge,
                               serial_number="SN-1", hmac="ab12") is ActivationState.PENDING

    pairing = b.pair_by_code(pending.code, "alice", "リビング")

    assert (pairing.user, pairing.client_id, pairing.activation_hmac) == ("alice", CLIENT,
                                                                          "ab12")
    assert a.get(ROBOT) == pairing
    assert a.pending() == [] and b.pending() == []
    for store in (a, b):
        assert store.record_activation(ROBOT, CLIENT, challenge=pending.challenge,
                                       serial_number="SN-1", hmac="ab12") \
            is ActivationState.ACTIVATED
    with pytest.raises(UnknownCode):
        a.pair_by_code(pending.code, "bob")


def test_a_household_member_added_on_one_worker_is_seen_by_the_other(
        stores: Callable[..., PairingStore]) -> None:
    a, b = stores(), stores()
    a.pair(ROBOT, "alice", CLIENT)
    b.update_household(ROBOT, add=("bob",))
    household = a.get(ROBOT).household  # type: ignore[union-attr]
    assert household.members == ("alice", "bob") and household.default_person == "alice"

    a.update_household(ROBOT, default=None)
    assert b.get(ROBOT).household.guest_by_default  # type: ignore[union-attr]
    b.rename(ROBOT, "台所")
    a.mark_seen(ROBOT, DeviceInfo(firmware_version="2.0.1"))
    seen = b.get(ROBOT)
    assert seen is not None and (seen.name, seen.firmware_version) == ("台所", "2.0.1")
    assert seen.last_seen is not None
    assert [p.device_id for p in b.pairings()] == [ROBOT]

    b.revoke(ROBOT)
    assert a.get(ROBOT) is not None and not a.get(ROBOT).active  # type: ignore[union-attr]


def test_the_pending_pool_is_one_pool_across_workers(
        stores: Callable[..., PairingStore]) -> None:
    a, b = stores(max_pending=2), stores(max_pending=2)
    now = 1_000_000.0
    a.request_activation("aa:00:00:00:00:01", "c1", source="1.1.1.1", now=now)
    b.request_activation("aa:00:00:00:00:02", "c2", source="2.2.2.2", now=now)
    with pytest.raises(PendingPoolFull):   # both robots still asking
        a.request_activation("aa:00:00:00:00:03", "c3", source="3.3.3.3", now=now + 1)
    # The first robot went quiet: its code makes room, on either worker.
    b.request_activation("aa:00:00:00:00:02", "c2", source="2.2.2.2", now=now + 100)
    third = b.request_activation("aa:00:00:00:00:03", "c3", source="3.3.3.3", now=now + 101)
    assert sorted(p.device_id for p in a.pending(now + 102)) == [
        "aa:00:00:00:00:02", "aa:00:00:00:00:03"]
    assert a.waiting("aa:00:00:00:00:03", "c3", now + 102) == third


def test_robots_asking_several_workers_at_once_never_overfill_the_pool(
        stores: Callable[..., PairingStore]) -> None:
    """Twelve robots ask four workers for a code at the same moment; the pool holds
    five: five get one, seven are refused, and no code is given twice."""
    workers = [stores(max_pending=5, max_per_source=12) for _ in range(4)]
    now = 2_000_000.0

    def ask(n: int) -> str | None:
        try:
            return workers[n % 4].request_activation(
                f"aa:00:00:00:01:{n:02x}", f"c{n}", source="9.9.9.9", now=now).code
        except PendingPoolFull:
            return None

    with ThreadPoolExecutor(max_workers=12) as pool:
        codes = list(pool.map(ask, range(12)))
    given = [c for c in codes if c is not None]
    assert len(given) == 5 and len(set(given)) == 5
    assert sorted(p.code for p in workers[0].pending(now)) == sorted(given)


def test_the_token_secret_is_drawn_once_for_every_worker(postgres_url: str) -> None:
    a = PostgresPairingStore(postgres_url, "stackchan")
    b = PostgresPairingStore(postgres_url, "stackchan")
    other = PostgresPairingStore(postgres_url, "stackchan2")
    try:
        secret = a.shared_secret()
        assert len(secret) >= 32 and b.shared_secret() == secret == a.shared_secret()
        assert other.shared_secret() != secret
        a.pair(ROBOT, "alice")
        assert other.get(ROBOT) is None   # another plugin instance keeps its own robots
    finally:
        for store in (a, b, other):
            store.close()


def test_files_keep_the_secret_in_the_data_folder(tmp_path: Path) -> None:
    assert PairingStore(tmp_path).shared_secret() is None


def test_a_pairing_file_is_copied_into_the_database(postgres_url: str,
                                                    tmp_path: Path) -> None:
    files = PairingStore(tmp_path)
    files.pair(ROBOT, "alice", CLIENT)
    files.request_activation("aa:00:00:00:00:09", "c9")
    shared = PostgresPairingStore(postgres_url, "stackchan")
    try:
        assert shared.import_file(files) == (1, 1)
        assert shared.import_file(files) == (0, 0)
        assert shared.get(ROBOT) == files.get(ROBOT)
        assert shared.pending() == files.pending()
    finally:
        shared.close()


def test_what_a_connected_robot_is_checked_against_follows_other_workers(
        stores: Callable[..., PairingStore]) -> None:
    """``recent``: asked each second while a robot is connected (may be a second old)."""
    a, b = stores(), stores()
    a.pair(ROBOT, "alice", CLIENT)
    assert a.recent(ROBOT) == a.get(ROBOT)
    b.update_household(ROBOT, add=("bob",))
    assert until(lambda: a.recent(ROBOT).household.members == ("alice", "bob"))  # type: ignore[union-attr]
    b.revoke(ROBOT)
    assert until(lambda: not a.recent(ROBOT).active)  # type: ignore[union-attr]


def test_through_a_database_outage_a_connected_robot_keeps_its_last_known_pairing(
        postgres_url: str) -> None:
    store = PostgresPairingStore(postgres_url, "stackchan")
    store.pair(ROBOT, "alice", CLIENT)
    known = store.recent(ROBOT)
    pool = store._conn()
    pool.close()   # every query fails from now on, as with the database gone
    try:
        time.sleep(RECENT_S)
        assert store.recent(ROBOT) == known
        with pytest.raises(OSError):   # a robot never seen: the caller's fallback
            store.recent("aa:bb:cc:00:00:99")
    finally:
        store._pool = None
        store.close()


def until(check: Callable[[], bool], wait_s: float = 30.0) -> bool:
    """A bound on a busy machine, not a measure."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False
