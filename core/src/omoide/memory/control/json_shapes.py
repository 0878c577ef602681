"""The JSON shapes of memory control, shared by the HTTP routes and the CLI.

``omoide memory`` works against a :class:`omoide.memory_client.MemoryClient` with
two backends (the running server's HTTP API, or the store opened locally); both
produce these shapes, so each subcommand prints one format whichever backend ran.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import TYPE_CHECKING, Any

from omoide.memory.api import ExtractionReport
from omoide.memory.control.import_format import (
    ImportFailed,
    ImportReport,
    ImportTooLarge,
    ParsedImport,
    parse_import,
)
from omoide.memory.facts.profile import ProfileFact
from omoide.memory.facts.validity import Validity
from omoide.memory.index.person_index import UserIndex
from omoide.memory.journal.exchange_log import DeadLetter, PendingSummary
from omoide.memory.memory_json import to_json
from omoide.types import Memory, RetrievedMemory

if TYPE_CHECKING:
    from omoide.memory.engine import MemoryEngine


def profile_fact_json(fact: ProfileFact) -> dict[str, Any]:
    """A profile fact the prompt carried, as turn results and the console show it."""
    return {"id": fact.memory.id, "text": fact.memory.text, "category": str(fact.category)}


def memory_json(m: Memory) -> dict[str, Any]:
    """One memory in the export format."""
    return to_json(m)


def shown_memory_json(m: Memory, index: UserIndex) -> dict[str, Any]:
    """One memory as ``omoide memory show`` gives it: the export format, and when what
    it holds changed, every version oldest first, each with when it stopped being true
    and what replaced it (:mod:`omoide.memory.facts.validity`)."""
    out = to_json(m)
    versions = index.versions(m.id) if m.id in index else []
    if len(versions) > 1:
        validity = index.validity()
        current = index.current_version(m.id)
        out["versions"] = [_version_json(v, validity.get(v.id), v.id == current)
                           for v in versions]
    return out


def _version_json(m: Memory, validity: Validity | None, current: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"id": m.id, "text": m.text, "created_at": m.created_at.isoformat(),
                           "current": current}
    if validity is not None:
        row.update({"valid_until": validity.valid_until.isoformat()
                    if validity.valid_until else None,
                    "superseded_by": validity.superseded_by, "why": validity.why})
    return row


def scored_memory_json(r: RetrievedMemory) -> dict[str, Any]:
    """A search result: the memory and its score."""
    return {"score": round(r.score, 4), **to_json(r.memory)}


def pending_json(r: PendingSummary) -> dict[str, Any]:
    """One user's exchanges still to extract (``oldest``/``newest`` are null when all of
    them are quarantined) and how many are quarantined."""
    return {"user": r.user, "exchanges": r.exchanges,
            "oldest": r.oldest.isoformat() if r.oldest else None,
            "newest": r.newest.isoformat() if r.newest else None,
            "attempts": r.attempts, "last_error": r.last_error,
            "quarantined": r.quarantined}


def dead_letter_json(d: DeadLetter) -> dict[str, Any]:
    """A quarantined exchange and why extraction set it aside."""
    return {"exchange_id": d.exchange_id, "user": d.user, "at": d.at,
            "user_text": d.user_text, "attempts": d.attempts, "reason": d.reason,
            "quarantined_at": d.quarantined_at}


def extraction_json(report: ExtractionReport) -> dict[str, Any]:
    return {"user": report.user, "exchanges": report.exchanges,
            "stored": [to_json(m) for m in report.stored],
            "skipped_duplicates": report.skipped_duplicates,
            "superseded": report.superseded, "pending": report.pending,
            "error": report.error, "quarantined": report.quarantined}


def import_report_json(user: str, report: ImportReport, parsed: ParsedImport,
                       ) -> dict[str, Any]:
    """What an import did: imported, skipped (already there) and invalid counts, the
    new ids and the problems of the invalid lines (when they were skipped)."""
    return {"user": user, **report.as_json(), "invalid": parsed.invalid,
            "problems": [p.as_json() for p in parsed.problems]}


def import_refused_json(user: str, parsed: ParsedImport) -> dict[str, Any]:
    """An import refused for invalid lines: nothing was imported."""
    return {"user": user, "error": f"{parsed.invalid} invalid "
                                   f"{'line' if parsed.invalid == 1 else 'lines'}; nothing "
                                   "was imported (fix them, or import the valid ones: "
                                   "?skip_invalid=true, or --skip-invalid on the command "
                                   "line)",
            "imported": 0, "skipped": 0, "invalid": parsed.invalid,
            "problems": [p.as_json() for p in parsed.problems]}


async def run_import(engine: MemoryEngine, user: str, chunks: AsyncIterable[bytes], *,
                     max_items: int, max_bytes: int, skip_invalid: bool,
                     ) -> tuple[int, dict[str, Any]]:
    """Check every line of an import, then store it; returns an HTTP status and the body.

    200: imported (``invalid`` > 0 only with ``skip_invalid``); 422: invalid lines and
    nothing imported; 413: too large; 503: storing failed part-way (the body says how
    many were stored; importing again skips them).
    """
    try:
        parsed = await parse_import(chunks, max_items=max_items, max_bytes=max_bytes)
    except ImportTooLarge as exc:
        return 413, {"user": user, "error": str(exc), "imported": 0}
    if parsed.invalid and not skip_invalid:
        return 422, import_refused_json(user, parsed)
    try:
        report = await engine.import_memories(user, parsed.items)
    except ImportFailed as exc:
        return 503, {**import_report_json(user, exc.report, parsed), "error": str(exc)}
    return 200, import_report_json(user, report, parsed)
