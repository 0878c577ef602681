"""``omoide memory verify``: check every journal row against its checksum.

    omoide memory verify --config FILE

Reads the config's journal through a read-only connection (safe while ``omoide serve``
runs) and checks each exchange and extraction batch against the checksum written with it
(:mod:`omoide.memory.journal.row_checksum`). Prints how many rows were checked, how many
carry no checksum yet (a journal not opened since checksums came: the next start gives
them one), and every damaged row with its exchange id, person and time. Exit 0 when
nothing is damaged, 1 otherwise. With ``database.url`` the journal on PostgreSQL is
checked the same way.
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path
from typing import Any

from omoide.commands._common import EXIT_FAILED


def add_verify_command(msub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``verify`` to ``omoide memory``'s subcommands."""
    c = msub.add_parser("verify", help="check every journal row against its checksum"
                        " (a byte changed on disk is named by row)")
    c.add_argument("--config", required=True, help="config file (YAML)")
    c.set_defaults(handler=_verify)


def _verify(args: argparse.Namespace) -> int:
    from omoide.commands._common import load_or_exit
    from omoide.memory.journal.row_checksum import verify_journal

    settings = load_or_exit(args.config)
    if settings.envelope.database.url:
        return _verify_database(settings.envelope.database)
    path = settings.data_dir / settings.memory.journal
    if not path.exists():
        print(f"omoide: no journal at {path}")
        return EXIT_FAILED
    try:
        found = verify_journal(path)
    except sqlite3.DatabaseError as exc:
        print(f"omoide: the journal {path} cannot be read: {exc}")
        return EXIT_FAILED
    return _report(str(path), found)


def _verify_database(database: Any) -> int:
    """The journal on PostgreSQL (``database.url``), checked row by row."""
    from omoide.memory.journal.postgres_journal import PostgresJournal

    journal = PostgresJournal(str(database.url), path=Path("."), pool_size=1)
    try:
        journal.open()
        found = journal.verify()
    except Exception as exc:  # noqa: BLE001 - reported as the command's failure
        print(f"omoide: the journal database cannot be read: {exc}")
        return EXIT_FAILED
    finally:
        journal.close()
    return _report("the journal database", found)


def _report(where: str, found: Any) -> int:
    print(f"{where}: {found.checked} rows checked, {len(found.damaged)} damaged,"
          f" {found.unchecked} without a checksum yet")
    for row in found.damaged:
        print(f"  damaged: {row.table} {row.exchange_id} of {row.user} at {row.at}")
    if found.damaged:
        print("Damaged rows are never extracted (they are quarantined when extraction"
              " reaches them); restore the journal from a backup to get them back.")
    return EXIT_FAILED if found.damaged else 0
