"""uvicorn for ``omoide serve``: a server that says where it listens.

Once its socket listens, :class:`PublishingServer` writes the URL into
``<data_dir>/server.json`` through the data dir claim
(:class:`omoide.data_dir_owner.DataDirClaim`), so ``omoide memory`` can find it.
"""

from __future__ import annotations

import socket
from typing import Any

import uvicorn

from omoide.data_dir_owner import DataDirClaim


def connect_url(host: str, port: int) -> str:
    """The URL a local client reaches a server listening on ``host:port`` at."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class PublishingServer(uvicorn.Server):
    """uvicorn's server, publishing its URL once it listens."""

    def __init__(self, config: uvicorn.Config, claim: DataDirClaim) -> None:
        super().__init__(config)
        self._claim = claim

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.servers and self.servers[0].sockets:
            address: Any = self.servers[0].sockets[0].getsockname()
            self._claim.publish_server(connect_url(str(address[0]), int(address[1])))
