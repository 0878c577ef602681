"""``omoide migrate``: a single data dir's SQLite journal moved into PostgreSQL answers
every question as it did — what waits, what is quarantined, which batches are open with
which plan — idempotently and verified by counts and checksums."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from omoide.components.extractor import Fact
from omoide.memory.facts.dedup import Verdict
from omoide.memory.journal.exchange_log import Journal
from omoide.memory.journal.extraction_batches import PlannedFact
from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.memory.journal.storage import ExchangeJournal
from omoide.server.postgres_tokens import PostgresTokenStore
from omoide.server.tokens import TokenStore
from omoide.types import Exchange

JST = timezone(timedelta(hours=9))
CONFIG = """
server: {{data_dir: {data}}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
"""
FACT = (Fact("あなたは猫を飼っている。", "profile_pets", ("猫",)),)


def said(n: int, user: str = "mika") -> Exchange:
    return Exchange(f"{user}-{n}", user, f"話その{n}", "うん",
                    datetime(2026, 10, 1, 9, n, tzinfo=JST), "s1")


async def fill(journal: Journal) -> None:
    """A journal in every state: consumed, in an open planned batch, waiting,
    quarantined, skipped, and a person who never talked."""
    exchanges = [said(n) for n in range(7)] + [said(0, "taro")]
    for ex in exchanges:
        await journal.append(ex)
    done = await journal.open_batch("mika", exchanges[:2], FACT)
    done = await journal.save_plan(done, [PlannedFact(0, Verdict.DUPLICATE, None,
                                                      duplicate_of="m0")])
    await journal.finish_batch(done)
    planned = await journal.open_batch("mika", exchanges[2:3], FACT)
    await journal.save_plan(planned, [PlannedFact(0, Verdict.DUPLICATE, None,
                                                  duplicate_of="m1")])
    await journal.quarantine([exchanges[4].id], "failed 3 times")
    await journal.skip("mika", [exchanges[5].id])
    await journal.record_failure([exchanges[6].id], "parse error")
    await journal.note_user("yuki")


async def answers(journal: ExchangeJournal) -> list[object]:
    return [await journal.users(), await journal.pending("mika"),
            await journal.pending_summary(), await journal.dead_letters(),
            [(b.id, b.state, b.plan, b.facts) for b in await journal.batches("mika")],
            await journal.count_exchanges()]


def migrate(tmp_path: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "omoide.cli", "migrate", "--config",
                           str(tmp_path / "omoide.yaml"), "--to", url],
                          capture_output=True, text=True, timeout=120)


def test_a_migrated_journal_answers_as_the_sqlite_one_did(postgres_url: str,
                                                          tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "omoide.yaml").write_text(CONFIG.format(data=data), encoding="utf-8")
    sqlite_journal = Journal(data / "journal.sqlite3")
    sqlite_journal.open()
    asyncio.run(fill(sqlite_journal))
    before = asyncio.run(answers(sqlite_journal))
    sqlite_journal.close()

    files = TokenStore(data)
    admin = files.admin_token()
    alice, _ = files.create_person_token("mika", "phone")

    first = migrate(tmp_path, postgres_url)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "tokens: 1 person tokens copied now, the admin token copied" in first.stdout
    assert "8 exchanges (8 copied now), 2 extraction batches (2 copied now)" in first.stdout
    assert "verified" in first.stdout
    again = migrate(tmp_path, postgres_url)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "(0 copied now)" in again.stdout
    assert "tokens: 0 person tokens copied now\n" in again.stdout
    tokens = PostgresTokenStore(postgres_url)
    try:
        assert tokens.admin_token() == admin
        match = tokens.identify(alice)
        assert match is not None and match.user == "mika"
    finally:
        tokens.close()

    shared = PostgresJournal(postgres_url, path=data / "journal.sqlite3")
    shared.open()
    try:
        assert asyncio.run(answers(shared)) == before
        assert shared.verify().damaged == []
    finally:
        shared.close()


def test_a_damaged_row_is_named_and_left_behind(postgres_url: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "omoide.yaml").write_text(CONFIG.format(data=data), encoding="utf-8")
    journal = Journal(data / "journal.sqlite3")
    journal.open()
    for n in range(2):
        journal.append_sync(said(n))
    journal.close()
    db = sqlite3.connect(data / "journal.sqlite3")
    with db:  # a byte that is no longer UTF-8, as a failing disk leaves it
        db.execute("UPDATE exchanges SET user_text=CAST(X'ff41' AS TEXT) WHERE id='mika-1'")
    db.close()
    result = migrate(tmp_path, postgres_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not copied: mika-1" in result.stdout and "(1 copied now)" in result.stdout
