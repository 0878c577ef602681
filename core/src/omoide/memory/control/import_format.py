"""The memory import format, read strictly and in a stream.

An import is what ``omoide memory export`` writes: JSON lines, one memory per line
(a single JSON list is accepted too). Each memory is checked on its own
(:class:`ImportItem`) and every problem is reported with its line number, so a
person fixing a file sees them all at once. Nothing here trusts the input: invalid
UTF-8, ``"entities": 5``, ``"superseded_by": [1]``, ``"text": null``, a date in
year 9999 or 100,000 nested brackets are problems on their line, never exceptions.

:func:`parse_import` reads an async stream of byte chunks (an HTTP body) without
holding more than one line at a time (except for the JSON-list form, which is
bounded by the caller's byte limit); :func:`chunks_of` turns bytes in hand into such a
stream.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic_core

from omoide.errors import InvalidInput, OmoideError
from omoide.memory.memory_json import ImportItem, check_item
from omoide.types import Memory

MAX_LINE_BYTES = 64 * 1024
MAX_REPORTED_PROBLEMS = 100


@dataclass(frozen=True)
class ImportProblem:
    """What is wrong with one line (or one item of a JSON list)."""

    position: int
    message: str
    unit: Literal["line", "item"] = "line"

    def __str__(self) -> str:
        return f"{self.unit} {self.position}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        return {self.unit: self.position, "message": self.message}


@dataclass
class ParsedImport:
    """The valid items of an import and the problems of the others."""

    items: list[ImportItem] = field(default_factory=list)
    problems: list[ImportProblem] = field(default_factory=list)
    invalid: int = 0

    def add_problem(self, problem: ImportProblem) -> None:
        self.invalid += 1
        if len(self.problems) < MAX_REPORTED_PROBLEMS:
            self.problems.append(problem)


class ImportTooLarge(InvalidInput):
    """More items (or a longer list) than one import may carry."""


def _parse_line(raw: bytes, number: int, out: ParsedImport) -> None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        out.add_problem(ImportProblem(number, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}"
                                              f" at byte {exc.start + 1})"))
        return
    if number == 1:
        text = text.removeprefix("\ufeff")
    if not text.strip():
        return
    try:
        data = pydantic_core.from_json(text)  # bounded nesting, unlike json.loads
    except ValueError as exc:
        out.add_problem(ImportProblem(number, f"not JSON: {exc}"))
        return
    checked = check_item(data)
    if isinstance(checked, str):
        out.add_problem(ImportProblem(number, checked))
    else:
        out.items.append(checked)


def _check_count(out: ParsedImport, max_items: int) -> None:
    if len(out.items) + out.invalid > max_items:
        raise ImportTooLarge(f"more than {max_items} memories in one import (the limit is "
                             "server.limits.max_import_items); split the file")


def _parse_list(data: bytes, max_items: int) -> ParsedImport:
    out = ParsedImport()
    try:
        items = pydantic_core.from_json(data)
    except ValueError as exc:
        out.add_problem(ImportProblem(1, f"not a JSON list: {exc}"))
        return out
    if not isinstance(items, list):
        out.add_problem(ImportProblem(1, "expected a JSON list of memories"))
        return out
    if len(items) > max_items:
        raise ImportTooLarge(f"more than {max_items} memories in one import (the limit is "
                             "server.limits.max_import_items); split the file")
    for i, data_item in enumerate(items, 1):
        checked = check_item(data_item)
        if isinstance(checked, str):
            out.add_problem(ImportProblem(i, checked, "item"))
        else:
            out.items.append(checked)
    return out


async def parse_import(chunks: AsyncIterable[bytes], *, max_items: int,
                       max_bytes: int) -> ParsedImport:
    """Read an import from a stream of byte chunks.

    JSON lines are parsed line by line as they arrive; a JSON list (the first
    non-blank byte is ``[``) is collected up to ``max_bytes`` and parsed at the end.
    Raises :class:`ImportTooLarge` past ``max_items`` or ``max_bytes``.
    """
    out = ParsedImport()
    pending = b""
    number = 0
    seen = 0
    list_form: bool | None = None
    skipping_long_line = False
    async for chunk in chunks:
        seen += len(chunk)
        if seen > max_bytes:
            raise ImportTooLarge(f"import larger than {max_bytes} bytes (the limit is "
                                 "server.limits.max_import_bytes); split the file")
        if list_form is None:
            head = (pending + chunk).lstrip(b"\xef\xbb\xbf \t\r\n")
            if head:
                list_form = head.startswith(b"[")
        pending += chunk
        if list_form:
            continue
        while True:
            cut = pending.find(b"\n")
            if cut < 0:
                break
            line, pending = pending[:cut], pending[cut + 1:]
            number += 1
            if skipping_long_line:
                skipping_long_line = False
                continue
            _parse_line(line, number, out)
            _check_count(out, max_items)
        if len(pending) > MAX_LINE_BYTES and not skipping_long_line:
            out.add_problem(ImportProblem(number + 1,
                                          f"line longer than {MAX_LINE_BYTES} bytes"))
            skipping_long_line = True
        if skipping_long_line:
            pending = b""
    if list_form:
        return _parse_list(pending.removeprefix(b"\xef\xbb\xbf"), max_items)
    if pending and not skipping_long_line:
        number += 1
        _parse_line(pending, number, out)
        _check_count(out, max_items)
    return out


async def chunks_of(data: bytes, size: int = 1 << 20) -> AsyncIterator[bytes]:
    """``data`` as a stream of chunks, for :func:`parse_import` (a file in hand)."""
    for start in range(0, len(data), size):
        yield data[start:start + size]


def iter_problem_lines(parsed: ParsedImport) -> Iterable[str]:
    """The problems for people, with a note when more were found than listed."""
    yield from (str(p) for p in parsed.problems)
    hidden = parsed.invalid - len(parsed.problems)
    if hidden > 0:
        yield f"... and {hidden} more invalid lines"


@dataclass(frozen=True)
class ImportReport:
    """What an import did: memories stored, items skipped as already present, and how
    many of the person's memories still wait for their vectors (a large import stores
    first and embeds in the background: found by their words at once, by meaning
    once embedded)."""

    stored: list[Memory]
    skipped: int
    vectors_pending: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"imported": len(self.stored), "skipped": self.skipped,
                "vectors_pending": self.vectors_pending,
                "ids": [m.id for m in self.stored]}


class ImportFailed(OmoideError):
    """Storing an import failed part-way; ``report`` says what was stored before.

    Importing the same file again is safe: what is already there is skipped.
    """

    def __init__(self, report: ImportReport, total: int, error: BaseException) -> None:
        self.report = report
        self.total = total
        super().__init__(
            f"import stopped after {len(report.stored)} of {total} new memories: "
            f"{type(error).__name__}: {error}. Importing the same file again skips what "
            "is already stored.")


_IMPORT_NAMESPACE = uuid.UUID("6f6d6f69-6465-696d-706f-72742d696473")


def imported_memory_id(user: str, file_id: str) -> str:
    """The id an imported memory gets: the same for the same person and file id, so
    importing a file twice finds the first copy; different for every person."""
    return str(uuid.uuid5(_IMPORT_NAMESPACE, f"{user}\n{file_id}"))
