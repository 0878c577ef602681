"""The ``database:`` section: absent means the embedded SQLite journal (and no PostgreSQL
driver loaded); a PostgreSQL URL selects the shared journal; a password never sits in
the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from omoide.config_schema import DatabaseSettings, EnvValue
from omoide.database.connection import shown_url
from omoide.memory.journal.exchange_log import Journal
from omoide.memory.journal.opening import exchange_journal
from omoide.memory.journal.postgres_journal import PostgresJournal


def test_without_a_url_the_journal_is_the_sqlite_file(tmp_path: Path) -> None:
    for database in (None, DatabaseSettings()):
        journal = exchange_journal(tmp_path / "journal.sqlite3", database)
        assert isinstance(journal, Journal) and journal.file_backed


def test_a_postgresql_url_selects_the_shared_journal(tmp_path: Path) -> None:
    database = DatabaseSettings(url="postgresql://omoide@db:5432/omoide", pool_size=3,
                                lease_seconds=60)
    journal = exchange_journal(tmp_path / "journal.sqlite3", database)
    assert isinstance(journal, PostgresJournal) and not journal.file_backed
    assert (journal.pool_size, journal.lease_seconds) == (3, 60)
    assert not journal.is_open  # nothing connects before the engine starts


def test_a_password_in_the_file_is_refused_but_welcome_from_the_environment() -> None:
    with pytest.raises(ValueError, match=r"\{\$env: NAME\}"):
        DatabaseSettings(url="postgresql://omoide:hunter2@db/omoide")
    url = EnvValue("postgresql://omoide:hunter2@db/omoide", "OMOIDE_DATABASE_URL")
    assert DatabaseSettings(url=url).url == url


def test_only_postgresql_urls_are_accepted() -> None:
    with pytest.raises(ValueError, match="postgresql://"):
        DatabaseSettings(url="mysql://omoide@db/omoide")


def test_a_sqlite_setup_loads_no_postgresql_driver(tmp_path: Path) -> None:
    code = ("import sys, asyncio, pathlib\n"
            "from omoide.memory.journal.opening import exchange_journal\n"
            "import omoide.memory.engine, omoide.runtime, omoide.database.migrations\n"
            f"j = exchange_journal(pathlib.Path({str(tmp_path / 'j.sqlite3')!r}))\n"
            "j.open(); j.close()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in"
            " ('psycopg', 'psycopg_pool')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_a_second_worker_on_the_same_data_dir_is_told_to_use_its_own(tmp_path: Path,
                                                                    ) -> None:
    from omoide.data_dir_owner import DataDirClaim

    data = tmp_path / "data"
    config = tmp_path / "omoide.yaml"
    config.write_text(f"server: {{data_dir: {data}}}\n"
                      "database: {url: 'postgresql://omoide@127.0.0.1:9/omoide'}\n"
                      + "".join(f"{s}: {{use: fake}}\n"
                                for s in ("asr", "embed", "store", "chat", "tts")),
                      encoding="utf-8")
    claim = DataDirClaim.acquire(data, "omoide serve")
    try:
        out = subprocess.run([sys.executable, "-m", "omoide.cli", "serve", "--config",
                              str(config)], capture_output=True, text=True, timeout=120)
    finally:
        claim.release()
    assert out.returncode == 1
    assert "is in use by omoide serve" in out.stderr
    assert "their own server.data_dir" in out.stderr


def test_an_unreachable_database_stops_the_start_with_the_reason(tmp_path: Path) -> None:
    config = tmp_path / "omoide.yaml"
    config.write_text(f"server: {{data_dir: {tmp_path / 'data'}}}\n"
                      "database: {url: {$env: OMOIDE_DATABASE_URL}}\n"
                      + "".join(f"{s}: {{use: fake}}\n"
                                for s in ("asr", "embed", "store", "chat", "tts")),
                      encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "omoide.cli", "serve", "--config",
                          str(config)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMOIDE_DATABASE_URL":
                              "postgresql://omoide:hunter2@127.0.0.1:9/omoide"})
    assert out.returncode == 1
    assert ("omoide could not start: the database postgresql://omoide:***@127.0.0.1:9/omoide"
            " does not answer: connection failed") in out.stderr
    assert "Traceback" not in out.stderr and "hunter2" not in out.stderr


def test_urls_in_messages_never_show_the_password() -> None:
    assert shown_url("postgresql://omoide:s3cret@db:5432/omoide") == (
        "postgresql://omoide:***@db:5432/omoide")
    assert shown_url("postgresql://omoide@db/omoide") == "postgresql://omoide@db/omoide"
