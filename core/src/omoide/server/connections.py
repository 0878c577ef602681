"""What a connection may hold before it has asked for anything.

Half-sent requests cost a file descriptor each for as long as the client likes, and
nothing in the app sees them: its middleware runs only once the headers are complete.
So the limits live in the HTTP protocol (``omoide serve`` gives uvicorn
:func:`guarded_http_protocol`'s class) and :class:`ConnectionGate` keeps the books:

- **caps**: at most ``server.limits.max_connections`` open connections, and at most
  ``max_connections_per_source`` from one address (an IPv6 /64; trusted proxies are
  exempt), WebSockets included: a connection past a cap is answered 503 and closed as
  soon as it is accepted, and the refusals are logged once a minute per address. At
  the server's cap a new connection first takes the place of the one that has been
  sending a request head longest (a second at least), so a flood of half-sent
  requests from many addresses gives way to real clients;
- **header timeout**: a request head (a WebSocket handshake included) must be
  complete within ``header_timeout_s`` of the connection opening or of its first
  byte; a connection still sending it is answered 408 and closed;
- **head size**: a head past ``max_header_bytes`` is answered 431 and closed;
- **body timeout**: a body the app waits for may go ``body_timeout_s`` without a byte
  (time the server itself holds reading back does not count).

The gate checks the clocks once a second (:meth:`ConnectionGate.sweep`, from the
server's tick), so a timeout is honoured within a second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omoide.config import LimitSettings
from omoide.server.limits import source_key
from omoide.server.proxies import ProxyTrust

log = logging.getLogger("omoide.server.connections")

LOG_EVERY_S = 60.0
EVICT_AFTER_S = 1.0


@dataclass(frozen=True)
class ConnectionLimits:
    """The connection limits of one server (from ``server.limits``)."""

    max_connections: int
    max_per_source: int
    header_timeout_s: float
    body_timeout_s: float
    max_header_bytes: int

    @classmethod
    def from_settings(cls, limits: LimitSettings) -> ConnectionLimits:
        return cls(limits.max_connections, limits.max_connections_per_source,
                   limits.header_timeout_s, limits.body_timeout_s, limits.max_header_bytes)


class _Watch:
    """One open connection, as the gate follows it."""

    __slots__ = ("body_since", "cycle", "head_bytes", "head_since", "protocol", "source",
                 "transport", "upgraded")

    def __init__(self, transport: asyncio.BaseTransport, source: str, protocol: Any,
                 now: float) -> None:
        self.transport = transport
        self.source = source
        self.protocol = protocol
        self.cycle: Any = None          # the request the protocol last started
        self.head_since: float | None = now
        self.head_bytes = 0
        self.body_since = now           # when the body last moved
        self.upgraded = False


class _RefusalLog:
    """Logs a refusal reason once a minute per address, with how many it held back."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._last: dict[tuple[str, str], tuple[float, int]] = {}

    def note(self, source: str, what: str, setting: str) -> None:
        now = self._clock()
        key = (source, what)
        last = self._last.get(key)
        if last is not None and now - last[0] < LOG_EVERY_S:
            self._last[key] = (last[0], last[1] + 1)
            return
        held_back = last[1] if last is not None else 0
        more = f" ({held_back} more since the last line)" if held_back else ""
        log.warning("%s from %s (%s)%s; logged once a minute per address", what, source,
                    setting, more)
        self._last[key] = (now, 0)
        if len(self._last) > 10_000:
            self._last = {k: v for k, v in self._last.items() if now - v[0] < LOG_EVERY_S}


class ConnectionGate:
    """The open connections of one server, counted per source; see the module doc."""

    def __init__(self, limits: ConnectionLimits, trust: ProxyTrust | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.trust = trust or ProxyTrust(())
        self._clock = clock
        self._all: set[_Watch] = set()
        self._by_source: dict[str, set[_Watch]] = {}
        self._log = _RefusalLog(clock)

    @property
    def open_count(self) -> int:
        return len(self._all)

    def open_from(self, host: str | None) -> int:
        """How many connections the source of ``host`` holds open."""
        return len(self._by_source.get(source_key(host), ()))

    def admit(self, transport: asyncio.BaseTransport, host: str | None, protocol: Any,
              ) -> _Watch | None:
        """Count a new connection in, or None (refused and logged) past a cap."""
        source = source_key(host)
        if len(self._all) >= self.limits.max_connections:
            self._forget_closed(self._all)
            if len(self._all) >= self.limits.max_connections and not self._evict_slowest():
                self._log.note(source, "refused connections: the server holds its most",
                               "server.limits.max_connections")
                return None
        same = self._by_source.get(source)
        if same is not None and len(same) >= self.limits.max_per_source \
                and not self.trust.trusts(host):
            self._forget_closed(same)
            if len(same) >= self.limits.max_per_source:
                self._log.note(source, "refused connections: too many open",
                               "server.limits.max_connections_per_source")
                return None
        watch = _Watch(transport, source, protocol, self._clock())
        self._all.add(watch)
        self._by_source.setdefault(source, set()).add(watch)
        return watch

    def _evict_slowest(self) -> bool:
        """At the cap, close the connection that has been sending a request head the
        longest (a second at least): a real client sends one in milliseconds, so it is
        most likely one of a flood's."""
        now = self._clock()
        slowest = min((w for w in self._all if w.head_since is not None and not w.upgraded),
                      key=lambda w: w.head_since or now, default=None)
        if slowest is None or slowest.head_since is None \
                or now - slowest.head_since < EVICT_AFTER_S:
            return False
        self._log.note(slowest.source, "closed connections still sending a request head "
                       "to make room", "server.limits.max_connections")
        _close(slowest, 408 if slowest.head_bytes else None)
        self.release(slowest)
        return True

    def release(self, watch: _Watch) -> None:
        self._all.discard(watch)
        same = self._by_source.get(watch.source)
        if same is not None:
            same.discard(watch)
            if not same:
                del self._by_source[watch.source]

    def _forget_closed(self, watches: set[_Watch]) -> None:
        for watch in [w for w in watches if w.transport.is_closing()]:
            self.release(watch)

    # -- what the protocol reports ---------------------------------------------------
    def before_data(self, watch: _Watch) -> None:
        """Bytes arrived; called before the protocol parses them."""
        now = self._clock()
        cycle = watch.protocol.cycle
        if watch.head_since is None and (cycle is None or cycle.response_complete):
            watch.head_since = now        # the first byte of the next request
            watch.head_bytes = 0
        watch.body_since = now

    def after_data(self, watch: _Watch, size: int) -> int | None:
        """Bytes were parsed; returns 431 when the head has grown past its limit."""
        protocol: Any = watch.protocol
        upgraded = watch.transport.get_protocol() is not protocol
        if upgraded:                                         # became a WebSocket
            watch.upgraded = True
            watch.head_since = None
            return None
        if protocol.cycle is not watch.cycle:                # a head was completed
            watch.cycle = protocol.cycle
            watch.head_since = None
            watch.head_bytes = 0
        elif watch.head_since is not None:
            watch.head_bytes += size
            if watch.head_bytes > self.limits.max_header_bytes:
                self._log.note(watch.source, "closed a connection: request head too large",
                               "server.limits.max_header_bytes")
                return 431
        return None

    # -- the clocks ------------------------------------------------------------------
    def sweep(self) -> None:
        """Forget closed connections and close those past a timeout."""
        now = self._clock()
        for watch in list(self._all):
            if watch.transport.is_closing():
                self.release(watch)
            elif not watch.upgraded:
                self._check_clocks(watch, now)

    def _check_clocks(self, watch: _Watch, now: float) -> None:
        if watch.head_since is not None:
            if now - watch.head_since > self.limits.header_timeout_s:
                self._log.note(watch.source, "closed connections that did not finish a "
                               "request head in time", "server.limits.header_timeout_s")
                _close(watch, 408 if watch.cycle is not None or watch.head_bytes else None)
            return
        cycle = watch.cycle
        if cycle is None or cycle.response_complete or not cycle.more_body:
            watch.body_since = now
            return
        if watch.protocol.flow.read_paused:   # the server holds reading back, not them
            watch.body_since = now
            return
        if now - watch.body_since > self.limits.body_timeout_s:
            self._log.note(watch.source, "closed connections whose request body stalled",
                           "server.limits.body_timeout_s")
            _close(watch, None if cycle.response_started else 408)


_REASONS = {408: b"Request Timeout", 431: b"Request Header Fields Too Large",
            503: b"Service Unavailable"}
_MESSAGES = {408: b'{"error": "request not received in time"}',
             431: b'{"error": "request head too large"}',
             503: b'{"error": "too many connections"}'}


def answer_and_close(transport: Any, status: int | None) -> None:
    """Write a short JSON answer with ``status`` (None: nothing) to an asyncio (or
    uvloop) transport, and close it."""
    if status is not None and not transport.is_closing():
        body = _MESSAGES[status]
        transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n"
                        b"content-length: %d\r\nconnection: close\r\n\r\n%s"
                        % (status, _REASONS[status], len(body), body))
    transport.close()


def _close(watch: _Watch, status: int | None) -> None:
    answer_and_close(watch.transport, status)


def guarded_http_protocol(base: type[asyncio.Protocol], gate: ConnectionGate,
                          ) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class ``base`` (h11 or httptools), reporting to ``gate``."""

    class GuardedHTTPProtocol(base):  # type: ignore[valid-type, misc]
        _gate = gate

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            host = peer[0] if isinstance(peer, tuple) and peer else None
            self._watch = self._gate.admit(transport, host, self)
            if self._watch is None:
                answer_and_close(transport, 503)

        def data_received(self, data: bytes) -> None:
            watch = self._watch
            if watch is None or watch.transport.is_closing():
                return
            self._gate.before_data(watch)
            super().data_received(data)
            status = self._gate.after_data(watch, len(data))
            if status is not None:
                answer_and_close(watch.transport, status)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._watch is not None:
                self._gate.release(self._watch)
            super().connection_lost(exc)

    GuardedHTTPProtocol.__qualname__ = f"Guarded{base.__name__}"
    return GuardedHTTPProtocol
