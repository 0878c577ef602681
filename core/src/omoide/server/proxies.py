"""Who is really calling: forwarded headers, honoured only from trusted proxies.

A reverse proxy in front of omoide names the client it forwards in ``Forwarded``
(RFC 7239), ``X-Forwarded-For`` or ``X-Real-IP``, and the scheme and host the client
used in ``X-Forwarded-Proto`` / ``X-Forwarded-Host``. Anyone can send these headers, so
:class:`TrustedProxyHeaders` believes them only when the connecting address is in
``server.trusted_proxies`` (none by default, loopback included: a program on this
machine is no proxy unless the config says so). From a trusted proxy the request's
``client`` becomes the nearest address in the chain that is not itself a trusted
proxy; from anyone else the headers are removed, so nothing downstream (per-address
limits, the device routes' URLs, logs) can read them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

FORWARDING_HEADERS = frozenset({b"forwarded", b"x-forwarded-for", b"x-forwarded-proto",
                                b"x-forwarded-host", b"x-real-ip"})


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """``["127.0.0.1", "10.0.0.0/8"]`` -> networks (a bare address is a /32 or /128)."""
    return tuple(ipaddress.ip_network(e.strip(), strict=False) for e in entries)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip().strip('"')
    if text.startswith("["):          # Forwarded: for="[2001:db8::1]:4711"
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:        # 192.0.2.60:4711
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class ProxyTrust:
    """Which connecting addresses are proxies whose forwarding headers count."""

    def __init__(self, networks: Iterable[Network]) -> None:
        self.networks = tuple(networks)

    def trusts(self, host: str | None) -> bool:
        """Whether a connection from ``host`` comes from a trusted proxy."""
        if not self.networks or not host:
            return False
        address = _address(host)
        return address is not None and any(address in n for n in self.networks)

    def client_from(self, headers: dict[bytes, bytes]) -> str | None:
        """The forwarded client: walking the chain from the nearest hop, the first
        address that is not a trusted proxy (None when the headers name none)."""
        for chain in (_forwarded_for(headers.get(b"forwarded")),
                      _split(headers.get(b"x-forwarded-for")),
                      _split(headers.get(b"x-real-ip"))):
            if not chain:
                continue
            for hop in reversed(chain):
                address = _address(hop)
                if address is None:
                    return None      # "unknown" or garbage: believe nothing further
                if not any(address in n for n in self.networks):
                    return str(address)
            return str(_address(chain[0]))
        return None


def _joined(raw: Iterable[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """Headers by name; a repeated one is one list (``a, b``), as HTTP reads it."""
    out: dict[bytes, bytes] = {}
    for name, value in raw:
        out[name] = out[name] + b", " + value if name in out else value
    return out


def _split(value: bytes | None) -> list[str]:
    if not value:
        return []
    return [part.strip() for part in value.decode("latin-1").split(",") if part.strip()]


def _forwarded_for(value: bytes | None) -> list[str]:
    out = []
    for element in _split(value):
        for pair in element.split(";"):
            name, _, token = pair.strip().partition("=")
            if name.strip().lower() == "for":
                out.append(token)
    return out


def _forwarded_proto(headers: dict[bytes, bytes]) -> str | None:
    proto = _split(headers.get(b"x-forwarded-proto"))
    if not proto:
        for element in _split(headers.get(b"forwarded")):
            for pair in element.split(";"):
                name, _, token = pair.strip().partition("=")
                if name.strip().lower() == "proto":
                    proto = [token.strip('"')]
    if not proto:
        return None
    scheme = proto[-1].lower()
    return scheme if scheme in ("http", "https", "ws", "wss") else None


class TrustedProxyHeaders:
    """ASGI middleware: see the module docstring. Wraps the whole app."""

    def __init__(self, app: ASGIApp, trust: ProxyTrust) -> None:
        self.app = app
        self.trust = trust

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            raw = scope.get("headers") or []
            if any(name in FORWARDING_HEADERS for name, _ in raw):
                client = scope.get("client")
                if self.trust.trusts(client[0] if client else None):
                    self._apply(scope, _joined(raw))
                else:
                    scope["headers"] = [(n, v) for n, v in raw
                                        if n not in FORWARDING_HEADERS]
        await self.app(scope, receive, send)

    def _apply(self, scope: Scope, headers: dict[bytes, bytes]) -> None:
        host = self.trust.client_from(headers)
        if host is not None:
            scope["client"] = (host, 0)
        scheme = _forwarded_proto(headers)
        if scheme is not None:
            secure = scheme in ("https", "wss")
            if scope["type"] == "websocket":
                scope["scheme"] = "wss" if secure else "ws"
            else:
                scope["scheme"] = "https" if secure else "http"
