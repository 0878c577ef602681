"""``omoide memory verify`` on a journal in PostgreSQL (``database.url`` from the
environment): every row checked, a row changed behind omoide's back named."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg

from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.types import Exchange

JST = timezone(timedelta(hours=9))
CONFIG = """
server: {{data_dir: {data}}}
database: {{url: {{$env: OMOIDE_DATABASE_URL}}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
"""


def verify(config: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "omoide.cli", "memory", "verify",
                           "--config", str(config)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OMOIDE_DATABASE_URL": url})


def test_verify_checks_the_journal_in_postgresql(postgres_url: str, tmp_path: Path) -> None:
    journal = PostgresJournal(postgres_url, path=tmp_path / "journal.sqlite3")
    journal.open()
    for n, text in enumerate(["りんごを12個買った", "ラーメンが好きなんだ"]):
        journal.append_sync(Exchange(f"x{n}", "alice", text, "そうなんだ",
                                     datetime(2026, 9, 27, 20, n, tzinfo=JST)))
    journal.close()
    config = tmp_path / "omoide.yaml"
    config.write_text(CONFIG.format(data=tmp_path / "data"), encoding="utf-8")
    result = verify(config, postgres_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 rows checked, 0 damaged" in result.stdout
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE exchanges SET user_text='りんごを92個買った' WHERE id='x0'")
    result = verify(config, postgres_url)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 damaged" in result.stdout and "x0 of alice" in result.stdout
