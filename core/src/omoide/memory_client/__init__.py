"""What ``omoide memory`` talks to: one interface, two backends.

Each ``omoide memory`` subcommand is written once, against :class:`MemoryClient`.
:func:`open_memory_client` picks the backend:

- a server holds the data dir (:func:`omoide.data_dir_owner.find_server`): the
  :class:`~omoide.memory_client.remote.RemoteMemoryClient` calls its HTTP API with the
  admin token from the data dir (the store is single-process; the server has it);
- nothing does: the :class:`~omoide.memory_client.local.LocalMemoryClient` claims the
  data dir (so a server cannot start meanwhile), starts the components the command
  needs and opens the store and journal itself.

Both speak the JSON shapes of :mod:`omoide.memory.control.json_shapes`. To add a subcommand: add the
method here, implement it in both backends (the remote one calls the route that
does the same), and write the subcommand once in :mod:`omoide.commands.memory`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from omoide.config import Settings
from omoide.memory_client.interface import MemoryClient, MemoryClientError, NeedsLocalStore

__all__ = ["MemoryClient", "MemoryClientError", "NeedsLocalStore", "open_memory_client"]


@asynccontextmanager
async def open_memory_client(settings: Settings, command: str,
                             needs: tuple[str, ...] = ("embed", "store"),
                             *, wait_s: float = 120.0) -> AsyncIterator[MemoryClient]:
    """The client for ``settings``' data dir: the running server's API, or the store.

    ``needs`` are the stages the local backend starts (``()``: the journal only).
    ``wait_s`` bounds how long to wait for a server that is still starting.
    """
    from omoide.data_dir_owner import DataDirClaim, find_server

    server = find_server(settings.data_dir)
    if server is not None:
        from omoide.memory_client.remote import RemoteMemoryClient

        async with RemoteMemoryClient.connect(settings, server, wait_s=wait_s) as remote:
            yield remote
        return
    from omoide.memory_client.local import LocalMemoryClient

    with DataDirClaim.acquire(settings.data_dir, command):
        async with LocalMemoryClient.open(settings, needs) as local:
            yield local
