"""How a :class:`Memory` is kept in a vector store's payload, and back.

The payload always carries ``user`` (the store filters on it), the text, the
canonical text (dedup), dates as ISO strings, and the superseded link.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from omoide.components.store import USER_FIELD
from omoide.memory.language.canonical import dedup_key
from omoide.types import Memory


def to_payload(m: Memory) -> dict[str, Any]:
    return {
        USER_FIELD: m.user,
        "text": m.text,
        "key": dedup_key(m.text),
        "created_at": m.created_at.isoformat(),
        "event_dates": [d.isoformat() for d in m.event_dates],
        "kind": m.kind,
        "entities": list(m.entities),
        "source_exchange_ids": list(m.source_exchange_ids),
        "superseded_by": m.superseded_by,
    }


def from_payload(memory_id: str, payload: dict[str, Any]) -> Memory:
    return Memory(
        id=memory_id,
        user=str(payload[USER_FIELD]),
        text=str(payload["text"]),
        created_at=datetime.fromisoformat(str(payload["created_at"])),
        event_dates=tuple(date.fromisoformat(d) for d in payload.get("event_dates") or ()),
        kind=str(payload.get("kind") or "fact"),
        entities=tuple(payload.get("entities") or ()),
        source_exchange_ids=tuple(payload.get("source_exchange_ids") or ()),
        superseded_by=payload.get("superseded_by"),
    )


def to_json(m: Memory) -> dict[str, Any]:
    """The export format (one JSON object per memory)."""
    return {"id": m.id, **{k: v for k, v in to_payload(m).items() if k != "key"}}


def from_json(data: dict[str, Any], user: str) -> Memory:
    """Parse one exported memory strictly, re-owned by ``user`` (import never trusts the
    file's user). Raises :class:`omoide.errors.InvalidInput` naming what is wrong; the
    id is the file's own (see :meth:`MemoryEngine.import_memories` for imports)."""
    from omoide.errors import InvalidInput
    from omoide.memory.control.import_format import check_item

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
