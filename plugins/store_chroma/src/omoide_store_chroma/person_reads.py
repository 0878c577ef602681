"""Reads of whole small people, several answered by one Chroma call.

A search of a person with few entries, and the first page of a scan of one, both
fetch every entry of that person (under ``user == U``) with its embedding. Against
``chroma run`` with 10,000 people × 100 entries, one such ``get`` took 62 ms and one
``get`` under ``user $in [8 people]`` 115 ms (14 ms a person): most of a call is the
server's filtering, not the rows. The store's worker runs one call at a time, so while
it is busy, reads queue here; the next one it runs takes up to :data:`MOST_PEOPLE` of
them into one ``get`` and hands every waiting read its person's rows.

The queue is shared by the event loop (adding, giving up) and the worker thread
(taking), under a lock; results go back through concurrent futures.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from omoide.api import USER_FIELD, Priority

MOST_PEOPLE = 8
"""Most people one ``get`` reads (the 16-person call took 203 ms, 13 ms a person: no
cheaper per person than 8, and twice as long for the first read waiting in it)."""


Entries = dict[str, list[Any]]
"""A person's entries in the shape of a Chroma ``get`` result (``ids``, ``metadatas``,
``embeddings``: parallel lists)."""


def _no_entries() -> Entries:
    return {"ids": [], "metadatas": [], "embeddings": []}


@dataclass(eq=False)
class PersonRead:
    """One waiting read of ``user``'s entries: ``done`` gets them, or None when the
    person has more than ``most`` (then the caller reads them another way)."""

    user: str
    most: int
    priority: Priority
    done: Future[Entries | None] = field(default_factory=Future)

    def answer(self, entries: Entries | None) -> None:
        """Hand over the result (ignored when the reader has already given up)."""
        with contextlib.suppress(InvalidStateError):
            self.done.set_result(entries)

    def fail(self, exc: BaseException) -> None:
        """Hand over the failure of the call that read for it."""
        with contextlib.suppress(InvalidStateError):
            self.done.set_exception(exc)


Get = Callable[[list[str], int], dict[str, Any]]
"""Fetch the entries of these people (``user $in``), at most this many rows in all."""


class PersonReads:
    """Reads of whole people waiting for the store's worker."""

    def __init__(self, most_people: int = MOST_PEOPLE) -> None:
        self._most_people = most_people
        self._waiting: list[PersonRead] = []
        self._lock = threading.Lock()

    def add(self, user: str, most: int, priority: Priority) -> PersonRead:
        """Queue a read of ``user``'s entries (at most ``most`` of them wanted)."""
        read = PersonRead(user, most, priority)
        with self._lock:
            self._waiting.append(read)
        return read

    def drop(self, read: PersonRead) -> None:
        """``read`` is answered or its reader gave up: take it out of the queue."""
        with self._lock:
            if read in self._waiting:
                self._waiting.remove(read)

    def serve(self, read: PersonRead, get: Get) -> None:
        """On the worker: answer ``read`` and as many other waiting reads as one call
        may take (interactive ones first), unless ``read`` was answered already.

        The call asks for ``most + 1`` rows a person, in all; when as many come back,
        a large person may have crowded the others out, and each person of the call is
        read again on their own. An error of the call goes to every read in it.
        """
        batch = self._take(read)
        if not batch:
            return
        users = list(dict.fromkeys(r.user for r in batch))
        most = {u: max(r.most for r in batch if r.user == u) for u in users}
        try:
            asked = sum(most.values()) + len(users)
            result = get(users, asked)
            by_user = _split(result)
            if len(users) > 1 and len(result["ids"]) >= asked:
                by_user = {}  # a large person may have crowded the others out
                for u in users:
                    by_user.update(_split(get([u], most[u] + 1)))
        except BaseException as exc:  # noqa: BLE001 - handed to every reader of the call
            for r in batch:
                r.fail(exc)
            return
        for r in batch:
            entries = by_user.get(r.user) or _no_entries()
            r.answer(entries if len(entries["ids"]) <= r.most else None)

    def _take(self, read: PersonRead) -> list[PersonRead]:
        with self._lock:
            if read not in self._waiting or read.done.done():
                return []  # answered by an earlier call, or given up
            others = sorted((r for r in self._waiting if r is not read and not r.done.done()),
                            key=lambda r: int(r.priority))  # stable: arrival order within
            batch = [read]
            for r in others:
                if len({b.user for b in batch} | {r.user}) > self._most_people:
                    continue
                batch.append(r)
            for r in batch:
                self._waiting.remove(r)
        return batch


def _split(result: dict[str, Any]) -> dict[str, Entries]:
    """The rows of a ``get`` grouped by the person they belong to (``user`` metadata)."""
    out: dict[str, Entries] = {}
    embeddings = result["embeddings"]
    for i, meta in enumerate(result["metadatas"] or []):
        entries = out.setdefault(str(meta[USER_FIELD]), _no_entries())
        entries["ids"].append(result["ids"][i])
        entries["metadatas"].append(meta)
        entries["embeddings"].append(embeddings[i])
    return out
