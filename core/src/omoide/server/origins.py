"""Which Host headers and browser Origins the management API answers.

DNS rebinding: a web page at ``http://evil.example`` re-points its own name at the
owner's machine and calls omoide from the owner's browser. The browser still sends
``Host: evil.example``, so refusing unknown Host names stops it. Accepted names:

- ``localhost`` and ``*.localhost`` (browsers resolve them to loopback themselves);
- IP literals (``192.168.1.20``, ``[::1]``): no DNS is involved, nothing to rebind;
- ``server.host`` when it is a name, ``server.public_url``'s host, this machine's
  hostname (``socket.gethostname()``, its ``.local`` mDNS name and its FQDN);
- ``server.auth.allowed_hosts`` (a leading dot accepts every subdomain).

An ``Origin`` is accepted when it is the server's own (the origin the request was
sent to: the same host and port as its Host header), ``server.public_url``'s origin,
or one of ``server.auth.allowed_origins``. ``Origin: null`` (sandboxed frames, files)
is never accepted.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def split_host_header(value: str) -> tuple[str, int | None] | None:
    """``"Example.org:8003"`` -> ``("example.org", 8003)``; ``"[::1]"`` -> ``("::1", None)``.

    None when the header is not a host[:port].
    """
    value = value.strip()
    if not value or any(c in value for c in "/\\@ ?#") or len(value) > 300:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[1:end], value[end + 1:]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else ""
    else:
        host, _, port_text = value.partition(":")
        if ":" in port_text:
            return None
    port: int | None = None
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return None
        port = int(port_text)
    return host.lower().rstrip("."), port


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def machine_names() -> set[str]:
    """This machine's own names: hostname, ``hostname.local``, the FQDN."""
    names: set[str] = set()
    try:
        hostname = socket.gethostname().lower()
    except OSError:
        return names
    if hostname:
        names |= {hostname, f"{hostname.split('.')[0]}.local"}
        with contextlib.suppress(OSError):
            names.add(socket.getfqdn(hostname).lower())
    return names


@dataclass(frozen=True)
class HostPolicy:
    """The accepted Host names and Origins of one server."""

    names: frozenset[str]
    suffixes: tuple[str, ...]
    origins: frozenset[str]

    @classmethod
    def build(cls, *, listen_host: str, public_url: str | None,
              allowed_hosts: Iterable[str], allowed_origins: Iterable[str],
              include_machine_names: bool = True) -> HostPolicy:
        names = {"localhost"}
        suffixes = [".localhost"]
        if listen_host and not is_ip_literal(listen_host.strip("[]")):
            names.add(listen_host.lower())
        origins = set(allowed_origins)
        if public_url:
            parts = urlsplit(public_url)
            if parts.hostname:
                names.add(parts.hostname.lower())
                scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
                origins.add(f"{scheme}://{parts.netloc.lower()}")
        if include_machine_names:
            names |= machine_names()
        for entry in allowed_hosts:
            if entry.startswith("."):
                suffixes.append(entry)
                names.add(entry[1:])
            else:
                names.add(entry)
        return cls(frozenset(names), tuple(suffixes), frozenset(origins))

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a request with this Host header may be answered."""
        if host_header is None:
            return False
        parsed = split_host_header(host_header)
        if parsed is None:
            return False
        host = parsed[0]
        return (is_ip_literal(host) or host in self.names
                or any(host.endswith(s) for s in self.suffixes))

    def origin_allowed(self, origin: str, host_header: str | None) -> bool:
        """Whether a browser ``Origin`` may call the management API."""
        origin = origin.strip().lower()
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname or \
                parts.path or parts.query or parts.fragment or host_header is None:
            return False
        own = split_host_header(host_header)
        if own is None:
            return False
        try:
            origin_port = parts.port or _DEFAULT_PORTS[parts.scheme]
        except ValueError:
            return False
        # A Host without a port means the default port of the scheme the browser used,
        # which behind a TLS-terminating proxy is not the scheme this server sees.
        host_port = own[1] if own[1] is not None else _DEFAULT_PORTS[parts.scheme]
        return parts.hostname.rstrip(".") == own[0] and origin_port == host_port
