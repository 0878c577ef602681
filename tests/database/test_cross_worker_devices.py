"""Two ``omoide serve`` workers (real processes, their own data dirs) on one PostgreSQL
database accept any StackChan: a robot shows the activation code worker A gave it, its
owner enters the code on worker B, the robot's activation poll is answered 200 by both,
and with the token A issued it connects to B and talks as its person. A household
member added on B, made the robot's default person, is who the robot talks as on A;
one added by ``omoide devices`` (a worker's config) is seen by B; revoked on B while
connected to A, the robot is disconnected by A.

The robot is the plugin's simulator over real sockets; the models are the fake
doubles. Whose turn it was is read from the shared journal (the exchanges table).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

pytest.importorskip("omoide_device_stackchan")

from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan

CONFIG = """
server: {{data_dir: {data}, host: 127.0.0.1, port: {port}}}
database: {{url: {{$env: OMOIDE_DATABASE_URL}}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 300}}
asr: {{use: fake, text: こんにちは}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake, reply: "[happy] こんにちは!"}}
tts: {{use: fake, ms_per_char: 10}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
"""
WAIT_S = 60.0
"""A bound on a busy machine, not a measure."""


@pytest.fixture
def workers(omoide_workers: Any, tmp_path: Path) -> Iterator[tuple[httpx.Client, list[str]]]:
    with omoide_workers(2, lambda data, port: CONFIG.format(data=data, port=port)) as served, \
            httpx.Client(timeout=60,
                         headers={"Authorization": f"Bearer {served.admin}"}) as client:
        yield client, served.urls


def exchanges_of(url: str, person: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute('SELECT COUNT(*) FROM exchanges WHERE "user"=%s',
                           (person,)).fetchone()
    return int(row[0]) if row else 0


def until(check: object) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


async def talk(robot: SimulatedStackChan, base: str) -> None:
    """One typed turn with the robot connected to ``base``."""
    robot.base_url, robot.ws_url = base, None
    async with robot.session():
        reply = await robot.type_text("こんにちは")
    assert reply.complete and "こんにちは" in reply.text


@pytest.mark.slow
async def test_a_robot_activated_through_one_worker_talks_through_the_other(
        workers: tuple[httpx.Client, list[str]], postgres_url: str,
        tmp_path: Path) -> None:
    client, (a, b) = workers
    robot = SimulatedStackChan(a, device_id="02:00:00:aa:bb:01", serial_number="SN-1")
    with pytest.raises(ProvisioningRefused):
        await robot.provision()                      # A shows the code
    code = robot.activation["code"]  # type: ignore[index]
    assert [p["code"] for p in client.get(f"{b}/v1/devices").json()["pending"]] == [code]

    paired = client.post(f"{b}/v1/devices/pair", json={"code": code, "user": "alice"})
    assert paired.status_code == 201, paired.text    # entered on B
    for base in (b, a):                              # the robot polls either
        robot.base_url = base
        assert await robot.activate() == 200
    robot.base_url = a
    await robot.provision()                          # A issues its token
    assert robot.token and robot.ws_url and str(a.rsplit(":", 1)[1]) in robot.ws_url

    await talk(robot, b)                             # B accepts A's token
    assert until(lambda: exchanges_of(postgres_url, "alice") == 1)

    changed = client.patch(f"{b}/v1/devices/{robot.device_id}/household",
                           json={"add": ["bob"], "default_person": "bob"})
    assert changed.status_code == 200, changed.text
    seen = client.get(f"{a}/v1/devices/{robot.device_id}").json()["device"]
    assert seen["household"]["members"] == ["alice", "bob"], seen
    await talk(robot, a)                             # A serves bob now
    assert until(lambda: exchanges_of(postgres_url, "bob") == 1)
    assert exchanges_of(postgres_url, "alice") == 1

    # ``omoide devices`` with a worker's config changes the database, not its data dir.
    config = Path(tmp_path / "worker0.yaml")
    cli = subprocess.run(
        [sys.executable, "-m", "omoide.cli", "devices", "household", "--config",
         str(config), robot.device_id, "--add", "carol"], capture_output=True, text=True,
        timeout=120, env={**os.environ, "OMOIDE_DATABASE_URL": postgres_url})
    assert cli.returncode == 0, cli.stderr
    seen = client.get(f"{b}/v1/devices/{robot.device_id}").json()["device"]
    assert seen["household"]["members"] == ["alice", "bob", "carol"], seen
    folder = tmp_path / "data0" / "devices" / "device_stackchan"   # the plugin's own
    assert folder.is_dir() and not (folder / "pairings.json").exists()

    # Revoked on B while it talks to A: A closes its connection (policy violation).
    robot.base_url, robot.ws_url = a, None
    await robot.connect()
    try:
        assert client.post(f"{b}/v1/devices/{robot.device_id}/revoke").status_code == 200
        assert await robot.wait_closed(timeout=WAIT_S) == 1008
    finally:
        await robot.close()
