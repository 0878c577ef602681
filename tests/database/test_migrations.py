"""The versioned schema: numbered migrations applied in order, each once, even when
several workers start together."""

from __future__ import annotations

import threading

import pytest

from omoide.database.connection import is_postgresql_url, open_pool
from omoide.database.migrations import Migration, SchemaTooNew, apply_migrations

STEPS = [Migration(1, "notes", "CREATE TABLE notes (id INTEGER PRIMARY KEY)"),
         Migration(2, "note text", "ALTER TABLE notes ADD COLUMN body TEXT")]


def test_migrations_apply_in_order_each_once(postgres_url: str) -> None:
    pool = open_pool(postgres_url, size=2)
    try:
        with pool.connection() as conn:
            assert apply_migrations(conn, "notes", STEPS[:1]) == [1]
            assert apply_migrations(conn, "notes", STEPS) == [2]
            assert apply_migrations(conn, "notes", STEPS) == []
            conn.execute("INSERT INTO notes(id, body) VALUES (1, 'メモ')")
            rows = conn.execute("SELECT component, version, name FROM omoide_schema"
                                " ORDER BY version").fetchall()
            assert rows == [("notes", 1, "notes"), ("notes", 2, "note text")]
    finally:
        pool.close()


def test_workers_starting_together_migrate_once(postgres_url: str) -> None:
    pool = open_pool(postgres_url, size=6)
    applied: list[list[int]] = []
    errors: list[Exception] = []

    def start_worker() -> None:
        try:
            with pool.connection() as conn:
                applied.append(apply_migrations(conn, "notes", STEPS))
        except Exception as exc:  # noqa: BLE001 — collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=start_worker) for _ in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        pool.close()
    assert errors == []
    assert sorted(applied) == [[]] * 5 + [[1, 2]]


def test_a_failing_migration_leaves_nothing_half_done(postgres_url: str) -> None:
    broken = [STEPS[0], Migration(2, "typo", "ALTER TABLE nope ADD COLUMN x TEXT")]
    pool = open_pool(postgres_url, size=1)
    try:
        with pool.connection() as conn:
            with pytest.raises(Exception, match="nope"):
                apply_migrations(conn, "notes", broken)
            assert apply_migrations(conn, "notes", STEPS) == [1, 2]
    finally:
        pool.close()


def test_a_schema_newer_than_this_omoide_is_refused(postgres_url: str) -> None:
    pool = open_pool(postgres_url, size=1)
    try:
        with pool.connection() as conn:
            apply_migrations(conn, "notes", STEPS)
            with pytest.raises(SchemaTooNew, match="version 2"):
                apply_migrations(conn, "notes", STEPS[:1])
    finally:
        pool.close()


def test_migrations_must_be_numbered_from_one() -> None:
    with pytest.raises(ValueError, match="numbered"):
        apply_migrations(None, "notes", [STEPS[1]])  # type: ignore[arg-type]


def test_only_postgresql_urls_select_the_shared_database() -> None:
    assert is_postgresql_url("postgresql://omoide@db:5432/omoide")
    assert not is_postgresql_url(None)
    assert not is_postgresql_url("")
