"""The ready indexes of one cache: least recently used first, bounded in megabytes.

Memory is bounded by ``budget_mb``: an estimate per memory (:data:`ENTRY_BYTES` plus its
quantised vector, :func:`vector_bytes`) decides when the least recently used indexes are
dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator

from omoide import long_lived
from omoide.memory.config import IndexSettings
from omoide.memory.index.person_index import UserIndex

ENTRY_BYTES = 1_400
"""Memory one indexed memory takes besides its vector, the memory itself (its text, id
and dates) included, rounded up. Measured with tracemalloc over building an index (the
Memory objects made inside the measurement, 384-dimension vectors): 1,264 bytes a memory
at 3,000 memories and 1,128 at 10,000 of core/tests/memory/test_index_compact.py's
synthetic memories (1,739 and 1,603 with the vector), and about 1,240 at 20,000 of
``omoide bench memory_read``'s (which reports the RSS growth while an index is built,
an upper bound). Before the postings were compact (:mod:`.postings`), the vectors
quantised and shared words held once, the same measure gave 9.3 KB."""

DEFAULT_DIMS = 384
"""Dimensions assumed until the first vector read says otherwise."""


def vector_bytes(dims: int) -> int:
    """Bytes one memory's vector takes in an index: an int8 row with a float32 scale
    (:mod:`.quantised_vectors`), its row's flag and memory reference, and a fifth more for
    the spare rows of a growing matrix."""
    return int((dims + 4 + 1 + 8) * 1.2)


class ReadyIndexes:
    """People's ready indexes in least-recently-used order, with their estimated size.

    ``on_drop(user, index)`` runs before a person's index leaves (``index`` is None when
    they had none ready), to save its changes and forget when it was checked.
    """

    def __init__(self, settings: IndexSettings,
                 on_drop: Callable[[str, UserIndex | None], None]) -> None:
        self.settings = settings
        self._ready: OrderedDict[str, UserIndex] = OrderedDict()
        self._bytes: dict[str, int] = {}
        self.total_bytes = 0
        self._vector_bytes = 0
        self._on_drop = on_drop

    @property
    def budget_bytes(self) -> int:
        return int(self.settings.budget_mb * 1024 * 1024)

    def get(self, user: str) -> UserIndex | None:
        """``user``'s ready index, leaving the order alone."""
        return self._ready.get(user)

    def used(self, user: str) -> None:
        """Mark ``user``'s index as the most recently used."""
        self._ready.move_to_end(user)

    def __contains__(self, user: str) -> bool:
        return user in self._ready

    def __len__(self) -> int:
        return len(self._ready)

    def indexes(self) -> Iterator[UserIndex]:
        return iter(self._ready.values())

    def note_vector_size(self, nbytes: int) -> None:
        """The size of one float32 vector as the store gives it, from the first record
        read (until then :data:`DEFAULT_DIMS` dimensions are assumed)."""
        if not self._vector_bytes:
            self._vector_bytes = vector_bytes(max(1, nbytes // 4))

    def estimate(self, memories: int) -> int:
        """Bytes an index of ``memories`` memories takes."""
        return memories * (ENTRY_BYTES + (self._vector_bytes or vector_bytes(DEFAULT_DIMS)))

    def install(self, user: str, idx: UserIndex) -> None:
        """Make ``idx`` ``user``'s ready index, the most recently used; drop the least
        recently used others while over the budget."""
        long_lived.settle(f"the index of {user}")
        self._ready[user] = idx
        self._ready.move_to_end(user)
        self.account(user, idx)
        while self.total_bytes > self.budget_bytes and len(self._ready) > 1:
            oldest = next(iter(self._ready))
            if oldest == user:
                break
            self.drop(oldest)

    def has_room_for(self, idx: UserIndex) -> bool:
        """Whether ``idx`` fits the budget without dropping another."""
        return self.total_bytes + self.estimate(len(idx)) <= self.budget_bytes

    def least_recently_used(self, user: str) -> None:
        """Mark ``user``'s index as the first to drop."""
        self._ready.move_to_end(user, last=False)

    def account(self, user: str, idx: UserIndex) -> None:
        """Count ``idx`` (``user``'s, which may have grown or shrunk) in the total."""
        size = self.estimate(len(idx))
        self.total_bytes += size - self._bytes.get(user, 0)
        self._bytes[user] = size

    def drop(self, user: str) -> None:
        """Forget ``user``'s index (if any), after ``on_drop``."""
        self._on_drop(user, self._ready.get(user))
        self._ready.pop(user, None)
        self.total_bytes -= self._bytes.pop(user, 0)

    def clear(self) -> None:
        self._ready.clear()
        self._bytes.clear()
        self.total_bytes = 0
