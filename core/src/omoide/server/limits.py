"""Bounds on what one request, or one client, may cost.

- :func:`body_rule`: the largest body and the accepted content types of each route.
  Every route has a limit (device routes included); only audio turns, voice enrolment and
  imports get more than ``server.limits.max_body_bytes``. The guard refuses a declared
  ``Content-Length`` over the limit before reading anything, and counts the bytes of
  a chunked body as they arrive, so an oversize body is never buffered.
- :class:`NewUserLimiter`: how many user ids this server has not seen before one
  client address may start turns for per time window (429 with ``Retry-After``); with
  ``database.url`` counted in the shared database, so every worker enforces one limit
  and a person admitted on one worker is known on all. Request handlers call
  :meth:`NewUserLimiter.admit_async`: the database's queries run in a worker thread,
  never holding the event loop.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from omoide.config import LimitSettings
from omoide.server.shared_limits import SharedCounters

log = logging.getLogger("omoide.server")

JSON_TYPES = frozenset({"application/json"})
IMPORT_TYPES = frozenset({"application/json", "application/x-ndjson", "application/jsonl",
                          "application/json-lines", "application/x-jsonlines"})
AUDIO_TYPES = frozenset({"audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave",
                         "application/octet-stream"})

_IMPORT_PATH = re.compile(r"/v1/users/[^/]+/memories/import")
_VOICES_PATH = re.compile(r"/v1/users/[^/]+/voices")


@dataclass(frozen=True)
class BodyRule:
    """The largest body a route takes and, for omoide's own routes, its content types
    (``None``: the route judges them itself, as device routes do)."""

    max_bytes: int
    content_types: frozenset[str] | None
    setting: str
    """The setting that raises ``max_bytes`` (named in the 413 answer)."""


def body_rule(path: str, limits: LimitSettings, *, device_path: bool) -> BodyRule:
    if device_path:
        return BodyRule(limits.max_body_bytes, None, "server.limits.max_body_bytes")
    if path == "/v1/turns/audio":
        return BodyRule(limits.max_audio_bytes, AUDIO_TYPES, "server.limits.max_audio_bytes")
    if path == "/v1/chat/completions":   # the whole conversation, each time
        return BodyRule(limits.max_chat_bytes, JSON_TYPES, "server.limits.max_chat_bytes")
    if _VOICES_PATH.fullmatch(path):     # a few WAV recordings (base64) to enrol
        return BodyRule(limits.max_audio_bytes, JSON_TYPES, "server.limits.max_audio_bytes")
    if _IMPORT_PATH.fullmatch(path):
        return BodyRule(limits.max_import_bytes, IMPORT_TYPES,
                        "server.limits.max_import_bytes")
    return BodyRule(limits.max_body_bytes, JSON_TYPES, "server.limits.max_body_bytes")


def media_type(content_type: str | None) -> str | None:
    """``"application/json; charset=utf-8"`` -> ``"application/json"``."""
    if content_type is None:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def source_key(client_host: str | None) -> str:
    """The address a limit counts against: the IPv4 address, or the IPv6 /64 (one
    machine usually holds a whole /64, so per-address limits would be no limit)."""
    if not client_host:
        return "?"
    try:
        address = ipaddress.ip_address(client_host)
    except ValueError:
        return client_host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class NewUserLimiter:
    """At most ``per_source`` new user ids per source within ``window_s`` seconds.

    "New" means not seen by this server: not in the journal when it started (see
    :meth:`know`) and not admitted since. Known users are never limited.
    """

    def __init__(self, per_source: int, window_s: float,
                 clock: Callable[[], float] = time.monotonic, *,
                 shared: SharedCounters | None = None) -> None:
        self.per_source = per_source
        self.window_s = window_s
        self._clock = clock
        self._known: set[str] = set()
        self._recent: dict[str, deque[float]] = {}
        self._counting = threading.Lock()   # admit may run in worker threads
        self.shared = shared
        """With ``database.url``: the counts and the admitted people every worker sees
        (None: this process only). While the database does not answer, this process
        counts alone (logged)."""

    @classmethod
    def for_database(cls, per_source: int, window_s: float,
                     database_url: str | None) -> NewUserLimiter:
        """The limiter of a server: shared with a database URL (nothing connects
        before the first unknown user), in this process without one."""
        shared = SharedCounters.open(database_url) if database_url else None
        return cls(per_source, window_s, shared=shared)

    def know(self, users: Iterable[str]) -> None:
        """Mark ``users`` as known (existing people are never limited)."""
        self._known.update(users)

    def is_known(self, user: str) -> bool:
        """Whether this server knows ``user`` (from the journal, added, or admitted)."""
        return user in self._known

    async def admit_async(self, user: str, client_host: str | None) -> float | None:
        """:meth:`admit` for a request handler: a known person is answered at once; with
        the shared database the check runs in a worker thread, so the event loop serves
        other requests while it waits (for a connection, a lock, a database that does not
        answer)."""
        if self.shared is None or user in self._known or self.per_source <= 0:
            return self.admit(user, client_host)
        return await asyncio.to_thread(self.admit, user, client_host)

    def admit(self, user: str, client_host: str | None) -> float | None:
        """None when ``user`` may start a turn; otherwise the seconds until a new id
        from this source will be accepted again (blocking with a shared database: see
        :meth:`admit_async`)."""
        if user in self._known or self.per_source <= 0:
            return None
        if self.shared is not None:
            try:
                return self._admit_shared(user, client_host)
            except Exception:  # the database is down: count here alone
                log.warning("new-user limit: the shared database did not answer;"
                            " counting in this process", exc_info=True)
        with self._counting:
            return self._admit_here(user, client_host)

    def _admit_here(self, user: str, client_host: str | None) -> float | None:
        now = self._clock()
        self._forget_before(now - self.window_s)
        key = source_key(client_host)
        recent = self._recent.setdefault(key, deque())
        if len(recent) >= self.per_source:
            return max(1.0, math.ceil(recent[0] + self.window_s - now))
        recent.append(now)
        self._known.add(user)
        return None

    def _admit_shared(self, user: str, client_host: str | None) -> float | None:
        assert self.shared is not None
        if self.shared.admitted(user):
            self._known.add(user)
            return None
        wait = self.shared.hit("new_users_per_source", source_key(client_host),
                               self.per_source, self.window_s)
        if wait is not None:
            return float(max(1, math.ceil(wait)))
        self.shared.admit(user)
        self._known.add(user)
        return None

    def _forget_before(self, cutoff: float) -> None:
        for key in list(self._recent):
            recent = self._recent[key]
            while recent and recent[0] <= cutoff:
                recent.popleft()
            if not recent:
                del self._recent[key]
