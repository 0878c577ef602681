"""The journal's tables on PostgreSQL, as numbered migrations (:mod:`omoide.database`).

Columns mirror the SQLite journal's (texts stay ISO strings, so a row's checksum is the
same on both and a migrated journal verifies as it did), plus what several workers
need: ``lease_owner``/``lease_until`` on exchanges and batches, and ``seq`` to keep
batches in the order they were opened. ``user`` is a reserved word here: quoted.
"""

from __future__ import annotations

from omoide.database.migrations import Migration

COMPONENT = "journal"

MIGRATIONS = (
    Migration(1, "exchanges, users, extraction batches with leases", """
CREATE TABLE exchanges (
    id TEXT PRIMARY KEY,
    "user" TEXT NOT NULL,
    user_text TEXT NOT NULL,
    assistant_text TEXT NOT NULL,
    at TEXT NOT NULL,
    at_ts DOUBLE PRECISION NOT NULL,
    session_id TEXT,
    consumed_at TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    batch_id TEXT,
    quarantined_at TEXT,
    skipped_at TEXT,
    checksum TEXT,
    lease_owner TEXT,
    lease_until TIMESTAMPTZ
);
CREATE INDEX exchanges_waiting ON exchanges ("user", at_ts) WHERE consumed_at IS NULL;
CREATE TABLE users ("user" TEXT PRIMARY KEY, first_seen TEXT NOT NULL);
CREATE TABLE extraction_batches (
    seq BIGSERIAL,
    id TEXT PRIMARY KEY,
    "user" TEXT NOT NULL,
    exchange_ids TEXT NOT NULL,
    said_at TEXT NOT NULL,
    facts TEXT NOT NULL,
    plan TEXT,
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    checksum TEXT,
    plan_checksum TEXT,
    lease_owner TEXT,
    lease_until TIMESTAMPTZ
);
CREATE INDEX extraction_batches_open ON extraction_batches ("user", state);
CREATE TABLE journal_probes (id INTEGER PRIMARY KEY, at TEXT);
"""),
    # The console's people pages read each person's newest exchange and count: without
    # an index over every exchange of a person (the one above holds only unconsumed
    # ones) a page of 50 people scanned the table 50 times: 4.1 s at 200,000 exchanges,
    # 11 ms with it (tests/database/measure_people_pages.py).
    Migration(2, "every exchange of a person by time; unfinished batches in order", """
CREATE INDEX exchanges_person_time ON exchanges ("user", at_ts);
CREATE INDEX extraction_batches_unfinished ON extraction_batches (seq)
    WHERE state IN ('answered', 'planned');
"""),
)
