"""Moving a single server's data dir to PostgreSQL takes its robots and voices along:
``omoide devices migrate`` copies the StackChan pairings and pending codes of the data
folder's ``pairings.json``, ``omoide migrate`` the voiceprints of ``voices/``; both are
idempotent (run again, nothing is copied twice and what the database has stays), and
``omoide devices`` and ``omoide voices`` with the same config then read the database.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("omoide_device_stackchan")

from omoide.memory.journal.exchange_log import Journal
from omoide.types import Exchange
from omoide.voices import VoiceprintStore
from omoide.voices.shared_store import PostgresVoiceprintStore
from omoide_device_stackchan.pairing import PairingStore
from omoide_device_stackchan.shared_pairing import PostgresPairingStore

CONFIG = """
server: {{data_dir: {data}}}
database: {{url: {{$env: OMOIDE_DATABASE_URL}}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
devices: [{{use: stackchan}}]
"""
ROBOT = "aa:bb:cc:00:00:07"


def omoide(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "omoide.cli", *args], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "OMOIDE_DATABASE_URL": url})


def one_server(tmp_path: Path) -> Path:
    """A data dir one server filled: a journal, a robot paired to a household and one
    waiting with a code, and alice's voiceprint."""
    data = tmp_path / "data"
    journal = Journal(data / "journal.sqlite3")
    journal.open()
    asyncio.run(journal.append(Exchange("e1", "alice", "こんにちは", "やあ",
                                        datetime(2026, 10, 1, tzinfo=UTC), "s1")))
    journal.close()
    pairings = PairingStore(data / "devices" / "device_stackchan")
    pairings.pair(ROBOT, "alice", "client-7")
    pairings.update_household(ROBOT, add=("bob",))
    pairings.request_activation("aa:bb:cc:00:00:08", "client-8")
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    VoiceprintStore(data).enrol("alice", "m1", [vector, vector], source="cli")
    config = tmp_path / "omoide.yaml"
    config.write_text(CONFIG.format(data=data), encoding="utf-8")
    return config


@pytest.mark.slow
def test_a_data_dirs_robots_and_voices_move_to_the_database(postgres_url: str,
                                                            tmp_path: Path) -> None:
    config = one_server(tmp_path)
    files = PairingStore(tmp_path / "data" / "devices" / "device_stackchan")

    moved = omoide(postgres_url, "devices", "migrate", "--config", str(config))
    assert moved.returncode == 0, moved.stderr
    assert "1 pairings and 1 pending codes copied now" in moved.stdout
    again = omoide(postgres_url, "devices", "migrate", "--config", str(config))
    assert "0 pairings and 0 pending codes copied now" in again.stdout
    shared = PostgresPairingStore(postgres_url, "device_stackchan")
    try:
        assert shared.get(ROBOT) == files.get(ROBOT)
        assert shared.get(ROBOT).household.members == ("alice", "bob")  # type: ignore[union-attr]
        assert shared.pending() == files.pending()
    finally:
        shared.close()
    listed = omoide(postgres_url, "devices", "list", "--config", str(config), "--json")
    assert [p["device_id"] for p in json.loads(listed.stdout)["paired"]] == [ROBOT]

    migrated = omoide(postgres_url, "migrate", "--config", str(config))
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    assert "voiceprints: 1 people's copied now" in migrated.stdout
    assert "voiceprints: 0 people's copied now" in omoide(
        postgres_url, "migrate", "--config", str(config)).stdout
    voices = PostgresVoiceprintStore(postgres_url)
    try:
        [print_] = voices.voiceprints("alice")
        assert (print_.model_id, len(print_.vectors), print_.source) == ("m1", 2, "cli")
    finally:
        voices.close()
    listed = omoide(postgres_url, "voices", "list", "--config", str(config), "--json")
    assert listed.returncode == 0, listed.stderr
    assert "alice" in listed.stdout
