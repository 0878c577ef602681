"""Measure the StackChan pairing store with many robots paired (not a test: run it).

    .venv/bin/python tests/database/measure_pairings.py [--robots 10000]

Pairs ``--robots`` robots in the data folder's file and in a throwaway PostgreSQL, then
prints the median of 20 of each of what a worker does per robot request: a pairing read
(an OTA request, a handshake), ``recent`` (each connected robot's check once a second),
``mark_seen`` (OTA, connect, disconnect), and an unpaired robot's round: a code asked
for, an activation poll, the code entered.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from omoide.testing.postgresql import ThrowawayPostgres
from omoide_device_stackchan.pairing import Pairing, PairingStore
from omoide_device_stackchan.shared_pairing import PostgresPairingStore


def median_ms(work: Callable[[int], Any], runs: int = 20) -> float:
    times = []
    for n in range(runs):
        started = time.perf_counter()
        work(n)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def device(n: int) -> str:
    return f"02:00:{n >> 24 & 255:02x}:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}"


def fill(store: PairingStore, robots: int) -> None:
    with store._locked() as data:
        for n in range(robots):
            data["devices"][device(n)] = asdict(Pairing(device(n), f"u{n}", time.time(),
                                                        client_id=f"c{n}"))


def round_trip(store: PairingStore, n: int) -> None:
    robot = device(10_000_000 + n)
    pending = store.request_activation(robot, f"new{n}", source=f"10.0.{n}.1")
    store.record_activation(robot, f"new{n}", challenge=pending.challenge,
                            serial_number=None, hmac=None)
    store.pair_by_code(pending.code, "alice")


def measure(label: str, store: PairingStore, robots: int) -> None:
    started = time.perf_counter()
    fill(store, robots)
    print(f"{label}: {robots} robots paired in {time.perf_counter() - started:.1f} s")
    middle = robots // 2
    for what, work in (
            ("get", lambda n: store.get(device(middle + n))),
            ("recent", lambda n: store.recent(device(middle + n))),
            ("mark_seen", lambda n: store.mark_seen(device(middle + n))),
            ("code asked, polled, entered", lambda n: round_trip(store, n))):
        print(f"  {what}: median {median_ms(work):.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        measure("pairings.json", PairingStore(Path(folder)), args.robots)
    server = ThrowawayPostgres().start()
    try:
        store = PostgresPairingStore(server.create_database("measure"), "device_stackchan")
        measure("PostgreSQL", store, args.robots)
        store.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
