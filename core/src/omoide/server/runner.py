"""uvicorn for ``omoide serve``: a server that says where it listens and bounds what
connections may hold.

Once its socket listens, :class:`PublishingServer` writes the URL into
``<data_dir>/server.json`` through the data dir claim
(:class:`omoide.data_dir_owner.DataDirClaim`), so ``omoide memory`` can find it.
:func:`build_server` puts the connection limits in place
(:mod:`omoide.server.connections`: caps per server and per address, header and body
timeouts) and honours forwarded headers only from ``server.trusted_proxies``
(:mod:`omoide.server.proxies`; uvicorn's own proxy handling, which trusts loopback,
is off).
"""

from __future__ import annotations

import logging
import socket
from dataclasses import replace
from typing import Any

import uvicorn

from omoide.config import Settings
from omoide.data_dir_owner import DataDirClaim
from omoide.server.connections import ConnectionGate, ConnectionLimits, guarded_http_protocol
from omoide.server.proxies import ProxyTrust, TrustedProxyHeaders, parse_networks

log = logging.getLogger("omoide.server.runner")

FD_RESERVE = 256
"""File descriptors kept free of connections: the stores, the journal, models, logs."""

KEEP_ALIVE_S = 5


def connect_url(host: str, port: int) -> str:
    """The URL a local client reaches a server listening on ``host:port`` at."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class PublishingServer(uvicorn.Server):
    """uvicorn's server, publishing its URL once it listens and checking the
    connection clocks of ``gate`` once a second."""

    def __init__(self, config: uvicorn.Config, claim: DataDirClaim,
                 gate: ConnectionGate | None = None) -> None:
        super().__init__(config)
        self._claim = claim
        self.gate = gate

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.servers and self.servers[0].sockets:
            address: Any = self.servers[0].sockets[0].getsockname()
            self._claim.publish_server(connect_url(str(address[0]), int(address[1])))

    async def on_tick(self, counter: int) -> bool:
        if self.gate is not None and counter % 10 == 0:
            self.gate.sweep()
        return await super().on_tick(counter)


def fitting_connection_cap(wanted: int) -> int:
    """``wanted``, or fewer when the open-file limit leaves no room for that many
    connections (the soft limit is raised towards the hard one first)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return wanted
    fitted = max(16, soft - FD_RESERVE)
    log.warning("server.limits.max_connections lowered from %d to %d: the open-file limit "
                "is %d (raise it with ulimit -n)", wanted, fitted, soft)
    return fitted


def build_server(app: Any, settings: Settings, claim: DataDirClaim, *, host: str,
                 port: int, log_config: dict[str, Any]) -> PublishingServer:
    """The uvicorn server ``omoide serve`` runs ``app`` in."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    limits = ConnectionLimits.from_settings(settings.server.limits)
    limits = replace(limits, max_connections=fitting_connection_cap(limits.max_connections))
    trust = ProxyTrust(parse_networks(settings.server.trusted_proxies))
    gate = ConnectionGate(limits, trust)
    config = uvicorn.Config(TrustedProxyHeaders(app, trust), host=host, port=port,
                            log_level="info", log_config=log_config, ws_max_size=1 << 20,
                            proxy_headers=False, timeout_keep_alive=KEEP_ALIVE_S,
                            http=guarded_http_protocol(AutoHTTPProtocol, gate))
    return PublishingServer(config, claim, gate)
