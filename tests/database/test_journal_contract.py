"""The journal's contract: what both storages (SQLite, PostgreSQL) do the same way.

Every test runs on each backend (``backend`` fixture). Tests of several workers sharing
one journal run on PostgreSQL only: a SQLite journal belongs to one process (the
data-dir lock).
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from omoide.components.extractor import Fact
from omoide.memory.facts.dedup import Verdict
from omoide.memory.journal.activity import exchanges_by_id, people_activity
from omoide.memory.journal.exchange_log import ExchangesTaken
from omoide.memory.journal.extraction_batches import PlannedFact, memory_id
from omoide.memory.journal.postgres_journal import PostgresJournal
from omoide.memory.journal.row_checksum import JournalCheck, verify_journal
from omoide.memory.journal.storage import ExchangeJournal
from omoide.types import Exchange, Memory

from .conftest import JournalFactory

JST = timezone(timedelta(hours=9))
START = datetime(2026, 11, 30, 19, 0, tzinfo=JST)


def exchange(user: str, n: int, text: str = "") -> Exchange:
    return Exchange(id=str(uuid.uuid4()), user=user,
                    user_text=text or f"週末は箱根に行くよ ({n})",
                    assistant_text="いいですね", at=START + timedelta(minutes=n),
                    session_id="s1")


def plan_for(batch_id: str, user: str, at: datetime) -> list[PlannedFact]:
    memory = Memory(memory_id(batch_id, 0), user, "あなたは週末に箱根へ行く。", at,
                    entities=("箱根",))
    return [PlannedFact(0, Verdict.NEW, memory),
            PlannedFact(1, Verdict.DUPLICATE, None, duplicate_of="m-old")]


FACTS = [Fact("あなたは週末に箱根へ行く。", "event", ("箱根",)),
         Fact("あなたは温泉が好き。", "preference", ())]


def multi_worker_only(backend: str) -> None:
    if backend != "postgresql":
        pytest.skip("a SQLite journal belongs to one process (the data-dir lock)")


async def write(journal: ExchangeJournal, user: str, count: int) -> list[Exchange]:
    written = [exchange(user, n) for n in range(count)]
    for ex in written:
        await journal.append(ex)
    return written


# -- exchanges ---------------------------------------------------------------------
async def test_an_appended_exchange_reads_back_as_written(make_journal: JournalFactory,
                                                          ) -> None:
    journal = make_journal()
    ex = exchange("mika", 1, "明日は歯医者 \U0001f9b7")
    await journal.append(ex)
    await journal.append(ex)  # idempotent on the id
    assert await journal.exchanges([ex.id]) == [ex]
    assert await journal.count_exchanges() == 1
    assert await journal.users() == ["mika"]


async def test_exchanges_come_back_oldest_first(make_journal: JournalFactory) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 3)
    assert await journal.exchanges([e.id for e in reversed(written)]) == written
    assert await journal.pending("mika") == written
    assert await journal.pending_count("mika") == 3


async def test_users_are_listed_once_in_order(make_journal: JournalFactory) -> None:
    journal = make_journal()
    await write(journal, "taro", 1)
    await journal.note_user("hana")
    await journal.note_user("hana")
    assert await journal.users() == ["hana", "taro"]


async def test_pending_summary_counts_waiting_and_quarantined(make_journal: JournalFactory,
                                                              ) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 3)
    await journal.quarantine([written[0].id], "時刻が暦にない")
    [summary] = await journal.pending_summary("mika")
    assert (summary.exchanges, summary.quarantined) == (2, 1)
    assert (summary.oldest, summary.newest) == (written[1].at, written[2].at)
    assert await journal.pending_summary(users=["nobody"]) == []


async def test_people_activity_pages_people_in_id_order(make_journal: JournalFactory,
                                                        ) -> None:
    journal = make_journal()
    for user in ("taro", "Hana", "mika"):
        await write(journal, user, 2 if user == "mika" else 1)
    await journal.note_user("yuki")
    people = await people_activity(journal)
    assert [p.user for p in people] == ["Hana", "mika", "taro", "yuki"]  # bytewise
    mika = people[1]
    assert (mika.exchanges, mika.last_turn) == (2, START + timedelta(minutes=1))
    assert people[3].last_turn is None and people[3].exchanges == 0
    page = await people_activity(journal, after="Hana", limit=2)
    assert [p.user for p in page] == ["mika", "taro"]
    assert [p.user for p in await people_activity(journal, "taro")] == ["taro"]


async def test_activity_rows_come_from_either_journal_alike(make_journal: JournalFactory,
                                                           ) -> None:
    journal = make_journal()
    await write(journal, "mika", 2)
    await journal.note_user("Hana")
    rows = await journal.activity_rows(None, None, None)
    assert [(r[0], r[2], r[3]) for r in rows] == [
        ("Hana", None, 0), ("mika", (START + timedelta(minutes=1)).isoformat(), 2)]
    assert [r[0] for r in await journal.activity_rows(None, "Hana", 1)] == ["mika"]
    assert [r[0] for r in await journal.activity_rows("Hana", None, None)] == ["Hana"]


async def test_exchanges_by_id_reads_only_that_persons(make_journal: JournalFactory,
                                                      ) -> None:
    journal = make_journal()
    [mine] = await write(journal, "mika", 1)
    [theirs] = await write(journal, "taro", 1)
    found = await exchanges_by_id(journal, "mika", [mine.id, theirs.id])
    assert [(f.id, f.user_text, f.at) for f in found] == [(mine.id, mine.user_text,
                                                           mine.at)]


# -- batches -----------------------------------------------------------------------
async def test_a_batch_goes_answered_planned_done(make_journal: JournalFactory) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 2)
    work = await journal.pending_work("mika")
    assert [w.exchange for w in work] == written
    batch = await journal.open_batch("mika", written, FACTS)
    assert batch.state == "answered"
    assert await journal.pending("mika") == []
    assert await journal.pending_count("mika") == 0
    [open_one] = await journal.open_batches("mika")
    assert (open_one.id, open_one.facts, open_one.plan) == (batch.id, tuple(FACTS), None)
    planned = await journal.save_plan(batch, plan_for(batch.id, "mika", written[0].at))
    assert planned.state == "planned"
    [reread] = await journal.open_batches()
    assert reread.plan == planned.plan
    await journal.finish_batch(planned)
    assert await journal.open_batches() == []
    assert [b.state for b in await journal.batches("mika")] == ["done"]
    assert await journal.pending_summary("mika") == []


async def test_a_crash_after_planning_replays_the_journaled_plan(
        make_journal: JournalFactory) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 1)
    batch = await journal.open_batch("mika", written, FACTS)
    plan = plan_for(batch.id, "mika", written[0].at)
    await journal.save_plan(batch, plan)
    journal.close()  # the process dies here; a new one opens the journal
    journal.open()
    [replayed] = await journal.open_batches()
    assert (replayed.state, replayed.plan) == ("planned", tuple(plan))
    assert replayed.plan[0].memory is not None
    assert replayed.plan[0].memory.id == memory_id(batch.id, 0)


async def test_claimed_exchanges_cannot_go_in_a_second_batch(make_journal: JournalFactory,
                                                             ) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 2)
    await journal.open_batch("mika", written[:1], FACTS)
    with pytest.raises(ExchangesTaken):
        await journal.open_batch("mika", written, FACTS)
    assert [len(b.exchange_ids) for b in await journal.batches("mika")] == [1]
    assert [e.id for e in await journal.pending("mika")] == [written[1].id]


async def test_failed_batch_counts_attempts_and_abandoning_frees_exchanges(
        make_journal: JournalFactory) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 2)
    batch = await journal.open_batch("mika", written, FACTS)
    assert await journal.batch_failed(batch, "store down") == 1
    assert await journal.batch_failed(batch, "store down") == 2
    await journal.abandon_batch(batch, "gave up")
    assert await journal.open_batches() == []
    assert await journal.pending("mika") == written
    [summary] = await journal.pending_summary("mika")
    assert summary.last_error == "store down"


# -- quarantine, retry, skip -------------------------------------------------------
async def test_quarantine_release_and_skip(make_journal: JournalFactory) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 3)
    counts = await journal.record_failure([written[0].id], "parse error")
    assert counts == {written[0].id: 1}
    await journal.quarantine([written[0].id, written[1].id], "failed 3 times")
    dead = await journal.dead_letters("mika")
    assert [(d.exchange_id, d.reason) for d in dead] == [
        (written[0].id, "failed 3 times"), (written[1].id, "failed 3 times")]
    assert await journal.pending("mika") == [written[2]]
    assert await journal.release("mika", [written[0].id]) == [written[0].id]
    assert [w.attempts for w in await journal.pending_work("mika")] == [0, 0]
    assert await journal.skip("mika") == [written[1].id]
    assert await journal.skip("mika", [written[2].id]) == [written[2].id]
    assert await journal.dead_letters() == []
    assert await journal.pending("mika") == [written[0]]
    assert await journal.count_exchanges() == 3  # nothing is ever deleted


async def test_note_error_keeps_the_error_without_an_attempt(make_journal: JournalFactory,
                                                             ) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 1)
    await journal.note_error([written[0].id], "chat service down")
    [work] = await journal.pending_work("mika")
    assert work.attempts == 0
    [summary] = await journal.pending_summary()
    assert summary.last_error == "chat service down"


# -- checksums and health ----------------------------------------------------------
def verify(journal: ExchangeJournal) -> JournalCheck:
    if isinstance(journal, PostgresJournal):
        return journal.verify()
    return verify_journal(journal.path)


def change_behind_omoide(journal: ExchangeJournal, sql: str, *params: object) -> None:
    """A value changed outside omoide (a flipped byte on disk, a hand edit)."""
    if isinstance(journal, PostgresJournal):
        import psycopg

        with psycopg.connect(journal.url, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return
    db = sqlite3.connect(journal.path)
    with db:
        db.execute(sql, params)
    db.close()


async def test_a_row_changed_outside_omoide_is_found_and_never_extracted(
        make_journal: JournalFactory) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 2)
    batch = await journal.open_batch("mika", written[1:], FACTS)
    assert (verify(journal).checked, verify(journal).damaged) == (3, [])
    change_behind_omoide(journal, "UPDATE exchanges SET user_text=? WHERE id=?",
                         "週末は熱海に行くよ", written[0].id)
    change_behind_omoide(journal, "UPDATE extraction_batches SET facts=? WHERE id=?",
                         "[]", batch.id)
    found = verify(journal)
    assert sorted((d.table, d.exchange_id) for d in found.damaged) == sorted(
        [("exchange", written[0].id), ("extraction batch", batch.id)])
    assert await journal.exchanges([written[0].id]) == []
    assert await journal.pending_work("mika") == []
    [dead] = await journal.dead_letters("mika")
    assert dead.exchange_id == written[0].id and "checksum" in dead.reason
    assert await journal.open_batches() == []  # a damaged batch is never replayed


async def test_restored_rows_get_checksums_and_read_back(make_journal: JournalFactory,
                                                         ) -> None:
    journal = make_journal()
    ex = exchange("mika", 1)
    columns = ("id", "user", "user_text", "assistant_text", "at", "at_ts", "session_id")
    row = (ex.id, ex.user, ex.user_text, ex.assistant_text, ex.at.isoformat(),
           ex.at.timestamp(), ex.session_id)
    assert journal.restore_rows(columns, [row]) == 1
    assert journal.restore_rows(columns, [row]) == 0
    assert await journal.exchanges([ex.id]) == [ex]
    assert await journal.users() == ["mika"]


async def test_probe_writes_and_reopen_keeps_everything(make_journal: JournalFactory,
                                                        ) -> None:
    journal = make_journal()
    written = await write(journal, "mika", 2)
    journal.probe_sync()
    journal.reopen()
    assert journal.is_open
    assert await journal.exchanges([e.id for e in written]) == written
    journal.close()
    assert not journal.is_open


# -- several workers (PostgreSQL) --------------------------------------------------
async def test_concurrent_workers_never_get_the_same_exchange(
        make_journal: JournalFactory, backend: str) -> None:
    multi_worker_only(backend)
    workers = [make_journal(worker_id=f"w{n}") for n in range(4)]
    written = await write(workers[0], "mika", 40)
    got = await asyncio.gather(*(w.pending_work("mika", 7) for w in workers))
    ids = [p.exchange.id for work in got for p in work]
    assert len(ids) == len(set(ids)) == 28
    rest = [p.exchange.id for p in await make_journal().pending_work("mika")]
    assert sorted(ids + rest) == sorted(e.id for e in written)
    again = await workers[0].pending_work("mika", 7)  # its own lease: offered to it again
    assert [p.exchange.id for p in again] == [p.exchange.id for p in got[0]]


async def test_a_worker_cannot_batch_exchanges_another_holds(make_journal: JournalFactory,
                                                             backend: str) -> None:
    multi_worker_only(backend)
    first, second = make_journal(worker_id="w1"), make_journal(worker_id="w2")
    written = await write(first, "mika", 2)
    assert len(await first.pending_work("mika")) == 2
    with pytest.raises(ExchangesTaken):
        await second.open_batch("mika", written, FACTS)
    batch = await first.open_batch("mika", written, FACTS)
    assert await second.open_batches() == []  # first holds its batch
    assert [b.id for b in await first.open_batches()] == [batch.id]


async def test_an_expired_lease_on_exchanges_is_taken_over(make_journal: JournalFactory,
                                                           backend: str) -> None:
    multi_worker_only(backend)
    dead = make_journal(worker_id="dead", lease_seconds=0.2)
    alive = make_journal(worker_id="alive")
    written = await write(dead, "mika", 3)
    assert len(await dead.pending_work("mika")) == 3  # then the worker dies
    assert await alive.pending_work("mika") == []
    await asyncio.sleep(0.4)  # a lease's length, not a measurement
    taken = await alive.pending_work("mika")
    assert [p.exchange for p in taken] == written
    batch = await alive.open_batch("mika", written, FACTS)
    with pytest.raises(ExchangesTaken):  # the dead worker's late write is refused
        await dead.open_batch("mika", written, FACTS)
    assert [b.id for b in await alive.batches("mika")] == [batch.id]


async def test_an_expired_batch_is_taken_over_and_its_plan_replayed(
        make_journal: JournalFactory, backend: str) -> None:
    multi_worker_only(backend)
    dead = make_journal(worker_id="dead", lease_seconds=0.2)
    alive = make_journal(worker_id="alive")
    written = await write(dead, "mika", 2)
    await dead.pending_work("mika")
    batch = await dead.open_batch("mika", written, FACTS)
    plan = plan_for(batch.id, "mika", written[0].at)
    await dead.save_plan(batch, plan)  # then the worker dies before storing
    assert await alive.open_batches() == []
    await asyncio.sleep(0.4)
    [taken] = await alive.open_batches()
    assert (taken.id, taken.state, taken.plan) == (batch.id, "planned", tuple(plan))
    assert await dead.open_batches() == []  # now the live worker's
    await alive.finish_batch(taken)
    assert [b.state for b in await dead.batches("mika")] == ["done"]
    assert await alive.pending_count("mika") == 0


async def test_the_first_journaled_plan_wins(make_journal: JournalFactory,
                                             backend: str) -> None:
    multi_worker_only(backend)
    slow = make_journal(worker_id="slow", lease_seconds=0.2)
    fast = make_journal(worker_id="fast")
    written = await write(slow, "mika", 1)
    batch = await slow.open_batch("mika", written, FACTS)
    await asyncio.sleep(0.4)
    [taken] = await fast.open_batches()
    first = await fast.save_plan(taken, plan_for(batch.id, "mika", written[0].at))
    late = await slow.save_plan(batch, [PlannedFact(0, Verdict.DUPLICATE, None,
                                                    duplicate_of="other")])
    assert late.plan == first.plan
