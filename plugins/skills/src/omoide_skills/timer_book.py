"""Timers and alarms that survive restarts: a JSON file and one sleeping task.

:class:`TimerBook` keeps every pending timer in ``timers.json`` (written atomically
after each change) and runs one asyncio task that sleeps until the earliest one is
due, then hands it to ``on_due`` and removes it. Timers that fell due while the server
was down fire as soon as it is back, marked ``late``.

That file belongs to one worker. With a shared database (``database.url``) the timers
live in PostgreSQL instead (:class:`omoide_skills.shared_timer_book.SharedTimerBook`):
both books have the methods of :class:`TimerStorage`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from omoide.api import open_private

log = logging.getLogger("omoide.skills.timers")

TimerKind = Literal["timer", "alarm"]


@dataclass(frozen=True)
class Timer:
    """One pending timer (a duration) or alarm (a clock time) of one person."""

    id: str
    user: str
    kind: TimerKind
    due_at: datetime
    """When it goes off (timezone-aware, UTC)."""
    created_at: datetime
    label: str = ""
    duration_s: float | None = None
    """For timers: the duration asked for (an alarm has none)."""
    zone: str = "UTC"
    """The person's time zone when it was set (how its time is said)."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["due_at"] = self.due_at.isoformat()
        data["created_at"] = self.created_at.isoformat()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Timer:
        kind = data.get("kind")
        if kind not in ("timer", "alarm"):
            raise ValueError(f"unknown timer kind {kind!r}")
        due = datetime.fromisoformat(str(data["due_at"]))
        created = datetime.fromisoformat(str(data["created_at"]))
        if due.tzinfo is None or created.tzinfo is None:
            raise ValueError("timer times must carry a UTC offset")
        duration = data.get("duration_s")
        return cls(str(data["id"]), str(data["user"]), kind, due, created,
                   str(data.get("label") or ""),
                   float(duration) if duration is not None else None,
                   str(data.get("zone") or "UTC"))


OnDue = Callable[[Timer, bool], Awaitable[None]]
"""Called with a timer that went off and whether it is late (server was down)."""


class TimerStorage(Protocol):
    """What the timers tool needs of a book: pending timers kept, and fired once."""

    async def start(self) -> None:
        """Load what is kept and start firing what falls due."""
        ...

    async def stop(self) -> None: ...

    async def add(self, timer: Timer) -> None: ...

    async def cancel(self, ids: list[str]) -> list[Timer]:
        """Remove the pending timers ``ids``; returns those removed (not gone off)."""
        ...

    async def pending(self, user: str) -> list[Timer]:
        """``user``'s pending timers, soonest first."""
        ...


class TimerBook:
    """Pending timers of every person, persisted, with their scheduler task."""

    def __init__(self, path: Path, on_due: OnDue, *,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.path = Path(path)
        self._on_due = on_due
        self._clock = clock
        self._timers: dict[str, Timer] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._started_at: datetime | None = None
        self._stopping = False

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        """Load the file and start the scheduler (a corrupt file is kept aside)."""
        self._timers = await asyncio.to_thread(self._load)
        self._started_at = self._clock()
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name="omoide-timers")

    async def stop(self) -> None:
        if self._task is not None:
            # Python 3.11's wait_for swallows a cancel that arrives just as the event it
            # waits for is set (a timer added a moment ago): the flag ends the loop then
            self._stopping = True
            self._changed.set()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _load(self) -> dict[str, Timer]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            aside = self.path.with_suffix(".corrupt")
            log.error("timers file %s is unreadable (%s); kept as %s, starting empty",
                      self.path, exc, aside)
            with contextlib.suppress(OSError):
                os.replace(self.path, aside)
            return {}
        timers: dict[str, Timer] = {}
        for item in raw.get("timers", []) if isinstance(raw, dict) else []:
            try:
                timer = Timer.from_json(item)
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("dropping a malformed timer %r: %s", item, exc)
                continue
            timers[timer.id] = timer
        return timers

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        items = sorted(self._timers.values(), key=lambda t: t.due_at)
        with open_private(tmp, "w") as f:
            f.write(json.dumps({"timers": [t.to_json() for t in items]},
                               ensure_ascii=False, indent=1))
        os.replace(tmp, self.path)

    # -- changes ---------------------------------------------------------------------
    async def add(self, timer: Timer) -> None:
        self._timers[timer.id] = timer
        await asyncio.to_thread(self._save)
        self._changed.set()

    async def cancel(self, ids: list[str]) -> list[Timer]:
        removed = [self._timers.pop(i) for i in ids if i in self._timers]
        if removed:
            await asyncio.to_thread(self._save)
            self._changed.set()
        return removed

    def of(self, user: str) -> list[Timer]:
        """``user``'s pending timers, soonest first."""
        return sorted((t for t in self._timers.values() if t.user == user),
                      key=lambda t: t.due_at)

    async def pending(self, user: str) -> list[Timer]:
        return self.of(user)

    # -- scheduler -------------------------------------------------------------------
    async def _run(self) -> None:
        while not self._stopping:
            self._changed.clear()
            now = self._clock()
            due = sorted((t for t in self._timers.values() if t.due_at <= now),
                         key=lambda t: t.due_at)
            for timer in due:
                await self._fire(timer)
            if due:
                continue
            nxt = min((t.due_at for t in self._timers.values()), default=None)
            wait = None if nxt is None else max(0.0, (nxt - self._clock()).total_seconds())
            with contextlib.suppress(TimeoutError):
                # sleep in bounded steps: the wall clock may jump (suspend, NTP)
                await asyncio.wait_for(self._changed.wait(),
                                       None if wait is None else min(wait, 60.0))

    async def _fire(self, timer: Timer) -> None:
        self._timers.pop(timer.id, None)
        try:
            await asyncio.to_thread(self._save)
        except OSError:
            log.exception("cannot save timers after %s went off", timer.id)
        late = self._started_at is not None and timer.due_at < self._started_at
        try:
            await self._on_due(timer, late)
        except Exception:
            log.exception("timer %s of %s went off but could not be announced",
                          timer.id, timer.user)
