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
