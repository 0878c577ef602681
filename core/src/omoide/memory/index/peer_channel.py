"""The wire between workers: who changed whose memories, over PostgreSQL.

Every write, supersession or forget of a person's memories on one worker is announced
by one statement on the shared database (:data:`ANNOUNCE`): it raises the person's row
in ``memory_person_versions`` (migrations component ``memory_versions``) by one and,
in the same transaction, sends ``NOTIFY omoide_memory_writes`` with the person, the new
version, the worker and the memory ids stored and forgotten. PostgreSQL delivers a
notification only when its transaction commits, to every connection listening then, in
commit order; the row lock makes one person's versions commit in order, so a listener
sees each person's versions 1, 2, 3, ... with no gap while its connection holds.

A listener that lost its connection (a database restart, a network cut) missed what was
sent meanwhile. When it listens again it reads every person's version
(:data:`VERSIONS`) and compares them with the last versions it saw in order: a person
whose version moved on is *stale* — their cached index is caught up from the store.
The same comparison runs every ``catch_up_s`` on the worker's other connection, over
the people changed in the last three periods (:data:`VERSIONS_SINCE`): a connection
that died without telling anyone is found that way too.

A notification carries at most :data:`MAX_PAYLOAD_BYTES` (PostgreSQL's limit is
8000): a write of more ids than fit (a large import) is announced without them, and
listeners catch up from the store as for a missed version.

psycopg is imported when a channel opens, never at import: a SQLite-only install
needs no PostgreSQL driver.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from omoide.database.migrations import Migration

CHANNEL = "omoide_memory_writes"
COMPONENT = "memory_versions"
MIGRATIONS = (
    Migration(1, "a version per person's memories", """
CREATE TABLE memory_person_versions (
    person TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    changed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
"""),
    Migration(2, "people by when their memories last changed", """
CREATE INDEX memory_person_versions_changed ON memory_person_versions (changed_at);
"""),
)
MAX_PAYLOAD_BYTES = 7_800
"""The largest notification sent (PostgreSQL refuses one of 8000 bytes or more)."""

ANNOUNCE = f"""
WITH bumped AS (
    INSERT INTO memory_person_versions AS v (person, version) VALUES (%(person)s, 1)
    ON CONFLICT (person) DO UPDATE
        SET version = v.version + 1, changed_at = clock_timestamp()
    RETURNING version)
SELECT version, pg_notify('{CHANNEL}', json_build_object(
    'p', %(person)s::text, 'v', version, 'w', %(worker)s::text,
    's', %(stored)s::jsonb, 'f', %(forgotten)s::jsonb)::text)
FROM bumped"""
"""Raise the person's version and tell every listener, in one transaction."""

VERSIONS = "SELECT person, version FROM memory_person_versions"
"""Every person's version (when a listener listens again: what it missed may be old)."""
VERSIONS_SINCE = """SELECT person, version FROM memory_person_versions
WHERE changed_at > clock_timestamp() - make_interval(secs => %s)"""
"""The versions changed in the last seconds (the periodic check: a missed version stays
in its window for the next check, which is what decides it was missed)."""


@dataclass(frozen=True)
class PeerChange:
    """One announced change of a person's memories."""

    person: str
    version: int
    worker: str
    stored: tuple[str, ...] | None
    """Ids written or superseded; None when there were too many to name."""
    forgotten: tuple[str, ...] = ()


def announcement(person: str, worker: str, stored: Sequence[str],
                 forgotten: Sequence[str]) -> dict[str, str]:
    """The parameters of :data:`ANNOUNCE` for a change, without the ids when the
    notification would not fit (listeners then catch up from the store)."""
    params = {"person": person, "worker": worker, "stored": json.dumps(list(stored)),
              "forgotten": json.dumps(list(forgotten))}
    # the JSON PostgreSQL builds adds the keys and a version to these
    size = sum(len(v.encode()) for v in params.values()) + 64
    if size > MAX_PAYLOAD_BYTES:
        params.update(stored="null", forgotten="[]")
    return params


def decode(payload: str) -> PeerChange | None:
    """The change a notification carries; None for one this omoide cannot read."""
    try:
        raw = json.loads(payload)
        stored = raw["s"]
        return PeerChange(str(raw["p"]), int(raw["v"]), str(raw["w"]),
                          None if stored is None else tuple(str(i) for i in stored),
                          tuple(str(i) for i in raw.get("f") or ()))
    except (ValueError, KeyError, TypeError):
        return None


@dataclass
class SeenVersions:
    """The versions of each person a worker has seen in order (see the module
    docstring): what tells a missed change from one merely delivered late."""

    _seen: dict[str, int] = field(default_factory=dict)
    _ahead: dict[str, set[int]] = field(default_factory=dict)
    _suspects: dict[str, int] = field(default_factory=dict)

    def arrived(self, person: str, version: int) -> None:
        """A notification of ``version`` arrived (its own worker's included)."""
        seen = self._seen.get(person, 0)
        if version <= seen:
            return
        ahead = self._ahead.setdefault(person, set())
        ahead.add(version)
        while seen + 1 in ahead:
            seen += 1
            ahead.discard(seen)
        self._seen[person] = seen
        if not ahead:
            del self._ahead[person]

    def in_order(self) -> dict[str, int]:
        """Each person's version seen in order (what a worker keeps between starts)."""
        return dict(self._seen)

    def record(self, rows: Iterable[tuple[str, int]]) -> None:
        """Take the database's versions as seen (the first time a worker listens: its
        indexes are built from the store from now on)."""
        for person, version in rows:
            self._seen[person] = max(self._seen.get(person, 0), int(version))
            self._ahead.pop(person, None)

    def behind(self, rows: Iterable[tuple[str, int]], *, patient: bool = False) -> list[str]:
        """The people whose version in the database is past the one seen in order (a
        change was missed); they count as seen up to it from now on. ``patient`` (the
        periodic check, while the connection listens): a version is missed only when it
        was already past at the previous check and has not arrived since, not when its
        notification is merely on its way."""
        stale: list[str] = []
        suspects, self._suspects = self._suspects, {}
        for person, version in rows:
            version, seen = int(version), self._seen.get(person, 0)
            if version <= seen:
                continue
            if patient and not (person in suspects and seen < suspects[person]):
                self._suspects[person] = version
                continue
            stale.append(person)
            self._seen[person] = version
            self._ahead.pop(person, None)
        return stale
