"""What every ``omoide memory`` backend implements, and the errors it raises.

Kept apart from :mod:`omoide.memory_client` (which picks a backend and so imports both)
so that the backends can import the interface without importing each other.
"""

from __future__ import annotations

from typing import Any, Protocol

from omoide.errors import OmoideError


class MemoryClientError(OmoideError):
    """A memory operation failed; the message is for the person at the terminal."""


class NeedsLocalStore(MemoryClientError):
    """The operation must open the store itself, and a server has it."""


class MemoryClient(Protocol):
    """Memory control, wherever the store is. Memories are export-format dicts."""

    where: str
    """Where the work happens, for people ("the running server at http://...")."""

    async def list_memories(self, user: str) -> list[dict[str, Any]]:
        """Every memory of ``user``, oldest first."""
        ...

    async def search(self, user: str, text: str, limit: int) -> list[dict[str, Any]]:
        """Memories ranked for ``text`` (each with a ``score``)."""
        ...

    async def show(self, user: str, memory_id: str) -> dict[str, Any] | None: ...

    async def forget(self, user: str, memory_id: str) -> bool:
        """Delete a memory; False when ``user`` has no such memory."""
        ...

    async def export(self, user: str) -> list[dict[str, Any]]: ...

    async def import_file(self, user: str, data: bytes, *, skip_invalid: bool,
                          ) -> tuple[bool, dict[str, Any]]:
        """Import an export; ``(ok, body)`` with the report of
        :mod:`omoide.memory.control.json_shapes` (or its refusal, listing every invalid line)."""
        ...

    async def pending(self, user: str | None) -> list[dict[str, Any]]: ...

    async def extract(self, user: str) -> dict[str, Any]: ...

    async def dead_letters(self, user: str | None) -> list[dict[str, Any]]:
        """Quarantined exchanges (of ``user``, or everyone's) with the reason."""
        ...

    async def retry(self, user: str, exchange_ids: list[str] | None) -> list[str]:
        """Release ``user``'s quarantined exchanges (all, or these); returns their ids."""
        ...

    async def skip(self, user: str, exchange_ids: list[str] | None) -> list[str]:
        """Never extract these exchanges (default: the quarantined ones); their ids."""
        ...

    async def reembed(self, users: list[str] | None) -> dict[str, int]: ...

    async def profile(self, user: str, everything: bool) -> dict[str, Any]:
        """The profile as ``GET /v1/users/{user}/profile`` returns it (``everything``:
        also what the budget left out, superseded facts and why the rest is episodic)."""
        ...

    async def profile_set(self, user: str, text: str | None, memory_id: str | None,
                          category: str | None) -> dict[str, Any]:
        """Add a profile fact (``text``) or put a memory in the profile (``memory_id``);
        the memory. Raises :class:`MemoryClientError` with the reason when refused."""
        ...

    async def profile_forget(self, user: str, memory_id: str, keep_memory: bool) -> bool:
        """Forget a profile fact, or only take it out of the profile; False if unknown."""
        ...
