"""Postings of an index: a key (a word, a kanji, a day) → the memories holding it.

A Python set of memory ids costs 30-40 bytes a member (216 for a set of one), and a
person's memories hold some thirty keys each: most of an index was its postings. Here a
key of one memory keeps that id alone, a key of a few a tuple of ids, and a key of more
than :data:`TUPLE_AT_MOST` an ``array('I')`` of the memories' numbers (4 bytes a member;
:class:`MemoryNumbers` turns them back into ids). Readers get a set of ids either way.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

TUPLE_AT_MOST = 8
"""Members kept in a tuple of ids (40 + 8 bytes a member) before numbers in an array."""

SETS_KEPT = 32
"""Sets of ids kept for the keys of most memories last asked for (see :meth:`Postings.get`)."""

SET_KEPT_FROM = 2048
"""Members from which a key's set of ids is kept once made."""


class MemoryNumbers:
    """A small number for each memory of an index (reused once a memory is removed)."""

    __slots__ = ("_free", "_number", "ids")

    def __init__(self) -> None:
        self._number: dict[str, int] = {}
        self.ids: list[str] = []
        """The memory of each number ("" for a free one)."""
        self._free: list[int] = []

    def number(self, memory_id: str) -> int:
        """``memory_id``'s number, given now if it has none."""
        n = self._number.get(memory_id)
        if n is None:
            n = self._free.pop() if self._free else len(self.ids)
            if n == len(self.ids):
                self.ids.append(memory_id)
            else:
                self.ids[n] = memory_id
            self._number[memory_id] = n
        return n

    def known(self, memory_id: str) -> int | None:
        return self._number.get(memory_id)

    def release(self, memory_id: str) -> None:
        """Give ``memory_id``'s number back (once no posting holds it)."""
        n = self._number.pop(memory_id, None)
        if n is not None:
            self.ids[n] = ""
            self._free.append(n)


_Held = str | tuple[str, ...] | array  # type: ignore[type-arg]


class Postings(Generic[K]):
    """Keys and the memories holding each (see the module docstring)."""

    __slots__ = ("_numbers", "_sets", "_table")

    def __init__(self, numbers: MemoryNumbers) -> None:
        self._table: dict[K, _Held] = {}
        self._numbers = numbers
        self._sets: OrderedDict[K, set[str]] = OrderedDict()

    def __getstate__(self) -> tuple[dict[K, _Held], MemoryNumbers]:
        return self._table, self._numbers   # the kept sets are made again when asked

    def __setstate__(self, state: tuple[dict[K, _Held], MemoryNumbers]) -> None:
        self._table, self._numbers = state
        self._sets = OrderedDict()

    def __len__(self) -> int:
        return len(self._table)

    def __contains__(self, key: object) -> bool:
        return key in self._table

    def add(self, key: K, memory_id: str) -> None:
        held = self._table.get(key)
        if held is None:
            self._table[key] = memory_id
        elif isinstance(held, str):
            if held != memory_id:
                self._table[key] = (held, memory_id)
        elif isinstance(held, tuple):
            if memory_id not in held:
                self._table[key] = ((*held, memory_id) if len(held) < TUPLE_AT_MOST else
                                    array("I", [self._numbers.number(m)
                                                for m in (*held, memory_id)]))
        else:
            n = self._numbers.number(memory_id)
            if not held or held[-1] != n:   # a memory adds each key once
                held.append(n)
                self._sets.pop(key, None)

    def discard(self, key: K, memory_id: str) -> None:
        held = self._table.get(key)
        if held is None:
            return
        if isinstance(held, str):
            if held == memory_id:
                del self._table[key]
            return
        if isinstance(held, tuple):
            rest = tuple(m for m in held if m != memory_id)
            if len(rest) != len(held):
                self._table[key] = rest[0] if len(rest) == 1 else rest
            return
        n = self._numbers.known(memory_id)
        if n is not None and n in held:
            held.remove(n)
            self._sets.pop(key, None)
            if len(held) <= TUPLE_AT_MOST:
                ids = self._numbers.ids
                self._table[key] = tuple(ids[i] for i in held)

    def discard_all(self, keys: Iterable[K], memory_id: str) -> None:
        for key in keys:
            self.discard(key, memory_id)

    def get(self, key: K) -> set[str] | None:
        """The ids holding ``key``, None when no memory holds it. Not to be changed by
        the caller: the set of a key of :data:`SET_KEPT_FROM` memories or more is kept
        (for the :data:`SETS_KEPT` last asked for, until the key changes), since making
        it takes milliseconds and a person's questions come back to the same words."""
        held = self._table.get(key)
        if held is None:
            return None
        if isinstance(held, str):
            return {held}
        if isinstance(held, tuple):
            return set(held)
        kept = self._sets.get(key)
        if kept is not None:
            self._sets.move_to_end(key)
            return kept
        ids = self._numbers.ids
        made = {ids[i] for i in held}
        if len(made) >= SET_KEPT_FROM:
            self._sets[key] = made
            if len(self._sets) > SETS_KEPT:
                self._sets.popitem(last=False)
        return made

    def members(self, key: K) -> Iterable[str]:
        """The ids holding ``key``, without making a set (empty when none)."""
        held = self._table.get(key)
        if held is None:
            return ()
        if isinstance(held, str):
            return (held,)
        if isinstance(held, tuple):
            return held
        ids = self._numbers.ids
        return [ids[i] for i in held]

    def count(self, key: K) -> int:
        held = self._table.get(key)
        if held is None:
            return 0
        return 1 if isinstance(held, str) else len(held)

    def __iter__(self) -> Iterator[K]:
        return iter(self._table)

    def items(self) -> Iterator[tuple[K, set[str]]]:
        """Every key with its ids (a new set each: for a whole pass; iterating over the
        keys and :meth:`get` to look at some)."""
        for key in self._table:
            yield key, self.get(key) or set()
