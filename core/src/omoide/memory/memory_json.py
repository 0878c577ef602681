"""A memory as JSON: the export format of ``omoide memory``, and the strict check of one
memory read back from it (imports, the extraction journal's batches).

:class:`ImportItem` is the schema of one memory in that format; :func:`check_item`
validates untrusted data against it and says what is wrong in one line, never raising.
The import format itself (lines, limits, problems by line number) is
:mod:`omoide.memory.control.import_format`.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
)

from omoide.components.extractor import MAX_FACT_CHARS
from omoide.errors import InvalidInput
from omoide.memory.store_payload import to_payload
from omoide.text_controls import check_no_controls
from omoide.time_bounds import check_date, check_moment
from omoide.types import Memory


def _iso_text(value: Any) -> Any:
    # Only ISO strings: a number would silently become a Unix timestamp.
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 string")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


ShortText = Annotated[StrictStr, Field(min_length=1, max_length=200),
                      AfterValidator(check_no_controls)]


class ImportItem(BaseModel):
    """One memory as an import may carry it (the export format of ``omoide memory``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: ShortText | None = Field(None, description="The memory's id in the file "
                                                   "(imported under a derived id).")
    user: StrictStr | None = Field(None, description="Ignored: import never trusts the "
                                                     "file's owner.")
    text: Annotated[StrictStr, Field(min_length=1, max_length=MAX_FACT_CHARS),
                    AfterValidator(_not_blank), AfterValidator(check_no_controls)]
    created_at: Annotated[datetime, BeforeValidator(_iso_text),
                          AfterValidator(check_moment)] | None = None
    event_dates: list[Annotated[date, BeforeValidator(_iso_text),
                                AfterValidator(check_date)]] = Field(
        default_factory=list, max_length=16)
    kind: Annotated[StrictStr, Field(pattern=r"^[a-z_]{1,32}$")] = "fact"
    entities: list[Annotated[StrictStr, Field(min_length=1, max_length=100),
                             AfterValidator(check_no_controls)]] = Field(
        default_factory=list, max_length=32)
    source_exchange_ids: list[ShortText] = Field(default_factory=list, max_length=256)
    superseded_by: ShortText | None = None



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


def to_json(m: Memory) -> dict[str, Any]:
    """The export format (one JSON object per memory)."""
    return {"id": m.id, **{k: v for k, v in to_payload(m).items() if k != "key"}}


def from_json(data: dict[str, Any], user: str) -> Memory:
    """Parse one exported memory strictly, re-owned by ``user`` (import never trusts the
    file's user). Raises :class:`omoide.errors.InvalidInput` naming what is wrong; the
    id is the file's own (see :meth:`MemoryEngine.import_memories` for imports)."""
    item = check_item(data)
    if isinstance(item, str):
        raise InvalidInput(item)
    if item.id is None:
        raise InvalidInput("id: Field required")
    return Memory(id=item.id, user=user, text=item.text,
                  created_at=item.created_at or datetime.now().astimezone(),
                  event_dates=tuple(item.event_dates), kind=item.kind,
                  entities=tuple(item.entities),
                  source_exchange_ids=tuple(item.source_exchange_ids),
                  superseded_by=item.superseded_by)
