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

import unicodedata
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Annotated, Any, Literal

import pydantic_core
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
)

from omoide.errors import InvalidInput, OmoideError
from omoide.memory.extract.prompt import MAX_FACT_CHARS
from omoide.time_bounds import check_date, check_moment
from omoide.types import Memory

MAX_LINE_BYTES = 64 * 1024
MAX_REPORTED_PROBLEMS = 100


def _iso_text(value: Any) -> Any:
    # Only ISO strings: a number would silently become a Unix timestamp.
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 string")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _no_controls(value: str) -> str:
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise ValueError("must not contain control characters")
    return value


ShortText = Annotated[StrictStr, Field(min_length=1, max_length=200),
                      AfterValidator(_no_controls)]


class ImportItem(BaseModel):
    """One memory as an import may carry it (the export format of ``omoide memory``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: ShortText | None = Field(None, description="The memory's id in the file "
                                                   "(imported under a derived id).")
    user: StrictStr | None = Field(None, description="Ignored: import never trusts the "
                                                     "file's owner.")
    text: Annotated[StrictStr, Field(min_length=1, max_length=MAX_FACT_CHARS),
                    AfterValidator(_not_blank)]
    created_at: Annotated[datetime, BeforeValidator(_iso_text),
                          AfterValidator(check_moment)] | None = None
    event_dates: list[Annotated[date, BeforeValidator(_iso_text),
                                AfterValidator(check_date)]] = Field(
        default_factory=list, max_length=16)
    kind: Annotated[StrictStr, Field(pattern=r"^[a-z_]{1,32}$")] = "fact"
    entities: list[Annotated[StrictStr, Field(min_length=1, max_length=100),
                             AfterValidator(_no_controls)]] = Field(
        default_factory=list, max_length=32)
    source_exchange_ids: list[ShortText] = Field(default_factory=list, max_length=256)
    superseded_by: ShortText | None = None


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


def describe_validation_error(exc: ValidationError) -> str:
    """``"entities: Input should be a valid list; text: Field required"``."""
    parts = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc}: {message}" if loc else message)
    return "; ".join(parts)


def check_item(data: Any) -> ImportItem | str:
    """The validated item, or why ``data`` is not one."""
    if not isinstance(data, dict):
        return f"expected a JSON object (one memory), got {_json_kind(data)}"
    try:
        return ImportItem.model_validate(data)
    except ValidationError as exc:
        return describe_validation_error(exc)


def _json_kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


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
    """What an import did: memories stored, items skipped as already present."""

    stored: list[Memory]
    skipped: int

    def as_json(self) -> dict[str, Any]:
        return {"imported": len(self.stored), "skipped": self.skipped,
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
