"""Which moments ledger a config uses: the data folder's SQLite file, or the PostgreSQL
tables every worker shares (:mod:`omoide.moments.ledger`,
:mod:`omoide.moments.postgres_ledger`)."""

from __future__ import annotations

from pathlib import Path

from omoide.moments.ledger import MomentLedger


def open_ledger(path: Path, database_url: str | None = None) -> MomentLedger:
    """The ledger for a config: the SQLite file ``path`` without a database URL, the
    tables every worker shares with one (nothing connects before the first use)."""
    if not database_url:
        return MomentLedger(path)
    from omoide.moments.postgres_ledger import PostgresMomentLedger  # psycopg only then
    return PostgresMomentLedger(database_url, path=path)
