"""Paging through a person's records in stores whose own paging rescans from the start.

Embedded Qdrant sorts every point on every scroll page, and Chroma's ``offset``
shifts when a record before it is deleted. A store plugin with such paging keeps an
:class:`IdSnapshots`: the first page of a scan lists the person's ids once (ids
only, sorted), later pages are a bisect into that list and one fetch by ids. The
cursor is the id the next page starts at, so a scan resumes correctly even after
its snapshot was dropped (by a write, or because other scans pushed it out): the
ids are listed again and the cursor is found by bisection.

Use it from the store's worker thread only (it is not locked).
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Callable, Hashable


class IdSnapshots:
    """Sorted id lists of recent scans, a few at a time (least recently used dropped)."""

    def __init__(self, keep: int = 8) -> None:
        self._keep = keep
        self._lists: OrderedDict[Hashable, list[str]] = OrderedDict()

    def page(self, key: Hashable, cursor: str | None, limit: int,
             list_ids: Callable[[], list[str]]) -> tuple[list[str], str | None]:
        """The ids of the page starting at ``cursor`` and the next page's cursor.

        ``list_ids`` lists every id of the scanned person (any order); it is called
        when a scan starts (``cursor`` is None) or its list was dropped.
        """
        ids = None if cursor is None else self._lists.get(key)
        if ids is None:
            ids = sorted(list_ids())
            self._lists[key] = ids
            while len(self._lists) > self._keep:
                self._lists.popitem(last=False)
        else:
            self._lists.move_to_end(key)
        start = 0 if cursor is None else bisect.bisect_left(ids, cursor)
        end = start + limit
        if end >= len(ids):
            self._lists.pop(key, None)  # the scan is over
            return ids[start:], None
        return ids[start:end], ids[end]

    def forget(self, key: Hashable) -> None:
        """Drop ``key``'s list after a write (the next page lists the ids again)."""
        self._lists.pop(key, None)

    def clear(self) -> None:
        self._lists.clear()
