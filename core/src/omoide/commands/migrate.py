"""``omoide migrate``: move a single data dir's journal to PostgreSQL.

    omoide migrate --config FILE [--to postgresql://...]

Copies the SQLite journal of the config's data dir (every exchange with its extraction
state, every extraction batch, every person) into the PostgreSQL database named by
``--to`` or, without it, by the config's ``database.url`` (best given as
``{$env: OMOIDE_DATABASE_URL}``: a password on the command line is visible to other
users of the machine). Idempotent — run it again after an interruption — and verified
by counts and checksums (:mod:`omoide.memory.journal.postgres_copy`). The data dir is
claimed while it runs, so no server writes the journal meanwhile. Exit 0 when the copy
is verified, 1 otherwise.

The tokens of the data dir (``auth/``) are copied too: the admin token unless the
database has one already (then the database's stays: ``omoide token show`` prints it),
every person token not there yet, and the voiceprints (``voices/``) of everyone who
has none there yet, and the moments said, cancelled or switched off
(``moments.sqlite3``) not there yet. StackChan pairings move with ``omoide devices
migrate``. What is not moved yet: timers and the other files of the data dir stay where
they are; the vector store is not touched (point the config at a store server
separately).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from omoide.commands._common import EXIT_FAILED, load_or_exit

if TYPE_CHECKING:
    from omoide.memory.journal.postgres_copy import CopyReport


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("migrate", help="copy the data dir's journal into PostgreSQL"
                       " (idempotent, verified by counts and checksums)")
    p.add_argument("--config", required=True, help="config file (YAML)")
    p.add_argument("--to", metavar="URL", help="postgresql://... (default: the config's"
                   " database.url)")
    p.set_defaults(handler=_migrate)


def _migrate(args: argparse.Namespace) -> int:
    from omoide.data_dir_owner import DataDirBusy, DataDirClaim
    from omoide.database.connection import is_postgresql_url
    from omoide.memory.journal.postgres_copy import copy_journal
    from omoide.memory.journal.postgres_journal import PostgresJournal
    from omoide.moments.postgres_ledger import PostgresMomentLedger
    from omoide.moments.serving import LEDGER_FILE
    from omoide.server.postgres_tokens import PostgresTokenStore
    from omoide.server.tokens import TokenStore
    from omoide.voices import VoiceprintStore
    from omoide.voices.shared_store import PostgresVoiceprintStore

    settings = load_or_exit(args.config)
    url = args.to or settings.envelope.database.url
    if not is_postgresql_url(url):
        print("omoide: name the PostgreSQL database: --to postgresql://... or database.url"
              " in the config")
        return EXIT_FAILED
    source = settings.data_dir / settings.memory.journal
    if not source.exists():
        print(f"omoide: no journal at {source}")
        return EXIT_FAILED
    try:
        claim = DataDirClaim.acquire(settings.data_dir, "omoide migrate")
    except DataDirBusy as exc:
        print(f"omoide: {exc}")
        return EXIT_FAILED
    target = PostgresJournal(str(url), path=source, pool_size=2)
    tokens = PostgresTokenStore(str(url), pool_size=1)
    voices = PostgresVoiceprintStore(str(url), pool_size=1)
    moments = PostgresMomentLedger(str(url), pool_size=1)
    try:
        target.open()
        report = copy_journal(source, target)
        admin, people = tokens.import_tokens(TokenStore(settings.data_dir))
        voiced = voices.import_files(VoiceprintStore(settings.data_dir))
        said, switched, quiet = moments.import_file(settings.data_dir / LEDGER_FILE)
    except Exception as exc:  # noqa: BLE001 - the command's failure, said plainly
        print(f"omoide: the migration stopped: {type(exc).__name__}: {exc}")
        return EXIT_FAILED
    finally:
        moments.close()
        voices.close()
        tokens.close()
        target.close()
        claim.release()
    print(f"tokens: {people} person tokens copied now"
          + (", the admin token copied" if admin else ""))
    print(f"voiceprints: {voiced} people's copied now")
    print(f"moments: {said} said or cancelled, {switched} off switches and {quiet} "
          "people's own quiet hours copied now")
    return _print_report(source, report)


def _print_report(source: Path, report: CopyReport) -> int:
    print(f"{source} -> PostgreSQL: {report.exchanges} exchanges"
          f" ({report.exchanges_copied} copied now), {report.batches} extraction batches"
          f" ({report.batches_copied} copied now), {report.users} people")
    for row_id in report.not_copyable:
        print(f"  not copied: {row_id} (text PostgreSQL cannot hold: a damaged row)")
    for problem in report.mismatches:
        print(f"  MISMATCH: {problem}")
    print("verified: every row is there with its checksum" if report.verified
          else "NOT verified: see the mismatches above")
    return 0 if report.verified else EXIT_FAILED
