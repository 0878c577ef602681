"""Reliability (issue 27, point 7): a byte changed inside a journal row is noticed.

SQLite checks the structure of its file, not the values in it: a flipped byte in what a
person said went unnoticed, and extraction would have stored the changed text as a
memory. Each exchange row now carries a checksum of what it holds (id, person, both
texts, time, session), and each extraction batch one of what the chat model answered
and of the plan, written with the row, verified whenever the row is read, and by
``omoide memory verify``. A damaged row is never extracted (it is quarantined with the
reason) and never shown as if it were what was said. Rows of a journal older than the
checksums get one when the journal is opened (migration).

These tests write a real journal file (the journal omoide serve writes), change one byte
of it on disk as a failing disk or a careless hand would, and read it back.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from omoide.memory.journal.exchange_log import Journal
from omoide.types import Exchange

JST = timezone(timedelta(hours=9))
SAID = {"x1": "I bought 12 apples at the market", "x2": "ラーメンが好きなんだ",
        "x3": "my sister lives in Sapporo since 2019"}
CONFIG = """
server: {{data_dir: {data}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
"""


def write_journal(path: Path) -> None:
    journal = Journal(path)
    journal.open()
    for n, (exchange_id, text) in enumerate(SAID.items()):
        journal.append_sync(Exchange(id=exchange_id, user="alice", user_text=text,
                                     assistant_text="そうなんだ",
                                     at=datetime(2026, 9, 27, 20, n, tzinfo=JST)))
    journal.close()


def flip(path: Path, old: bytes, new: bytes) -> None:
    """Change bytes inside the file (the journal is closed: no WAL left)."""
    raw = path.read_bytes()
    assert raw.count(old) == 1, f"{old!r} occurs {raw.count(old)} times"
    path.write_bytes(raw.replace(old, new))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    write_journal(data / "journal.sqlite3")
    (tmp_path / "omoide.yaml").write_text(CONFIG.format(data=data), encoding="utf-8")
    return data


def verify(data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "omoide.cli", "memory", "verify",
                           "--config", str(data.parent / "omoide.yaml")],
                          capture_output=True, text=True, timeout=120)


def test_verify_passes_a_journal_nobody_touched(data_dir: Path) -> None:
    result = verify(data_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 rows checked, 0 damaged" in result.stdout


def test_verify_names_the_row_whose_byte_was_flipped(data_dir: Path) -> None:
    flip(data_dir / "journal.sqlite3", b"12 apples", b"92 apples")
    result = verify(data_dir)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "x1" in result.stdout and "alice" in result.stdout
    assert "1 damaged" in result.stdout and "Traceback" not in result.stderr


def test_a_flip_that_breaks_the_utf8_is_caught_too(data_dir: Path) -> None:
    flip(data_dir / "journal.sqlite3", "ラーメン".encode(), b"\xff" + "ラーメン".encode()[1:])
    result = verify(data_dir)
    assert result.returncode == 1 and "x2" in result.stdout, result.stdout + result.stderr


def test_a_damaged_row_is_never_read_as_what_was_said(data_dir: Path) -> None:
    flip(data_dir / "journal.sqlite3", b"since 2019", b"since 2018")
    journal = Journal(data_dir / "journal.sqlite3")
    journal.open()
    try:
        read = asyncio.run(journal.exchanges(list(SAID)))
        waiting = asyncio.run(journal.pending("alice"))
        dead = asyncio.run(journal.dead_letters("alice"))
    finally:
        journal.close()
    assert [e.id for e in read] == ["x1", "x2"]
    assert [e.id for e in waiting] == ["x1", "x2"]
    assert [d.exchange_id for d in dead] == ["x3"] and "checksum" in dead[0].reason


def test_rows_of_an_older_journal_get_a_checksum_when_it_is_opened(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE exchanges (id TEXT PRIMARY KEY, user TEXT NOT NULL,
            user_text TEXT NOT NULL, assistant_text TEXT NOT NULL, at TEXT NOT NULL,
            at_ts REAL NOT NULL, session_id TEXT, consumed_at TEXT,
            attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT);
        CREATE TABLE users (user TEXT PRIMARY KEY, first_seen TEXT NOT NULL);
        INSERT INTO exchanges(id, user, user_text, assistant_text, at, at_ts)
            VALUES ('old1', 'alice', '猫を飼ってる', 'いいね', '2025-01-01T09:00:00+09:00',
                    1735689600);
    """)
    db.commit()
    db.close()
    journal = Journal(path)
    journal.open()
    journal.close()
    flip(path, "猫を".encode(), "犬を".encode())
    journal.open()
    try:
        assert asyncio.run(journal.exchanges(["old1"])) == []
    finally:
        journal.close()


def test_a_changed_byte_in_a_batch_of_extracted_facts_is_noticed(data_dir: Path) -> None:
    from omoide.components.extractor import Fact

    path = data_dir / "journal.sqlite3"
    journal = Journal(path)
    journal.open()
    try:
        said = asyncio.run(journal.pending("alice"))
        asyncio.run(journal.open_batch("alice", said[:1], [
            Fact("あなたはリンゴを12個買った。", "event", ("リンゴ",))]))
    finally:
        journal.close()
    flip(path, "12個".encode(), "92個".encode())
    result = verify(data_dir)
    assert result.returncode == 1 and "extraction batch" in result.stdout, result.stdout
    journal.open()
    try:
        assert asyncio.run(journal.batches("alice")) == []
        assert asyncio.run(journal.open_batches()) == []
    finally:
        journal.close()
