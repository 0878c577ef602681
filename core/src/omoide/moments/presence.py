"""Who is at a robot and whether it is busy, read from the turns' events.

A turn running for a person (or anyone at a robot that person used) makes them busy:
nothing is pushed over a turn. Someone else speaking at a robot — a guest, or another
member of its household — makes it someone else's for ``guest_minutes``: nothing of a
person's is pushed to a robot where another is present. This is the seam for speaker
identification: a turn's ``user`` is whoever the household's identification (or its
default person) said was speaking, ``guest`` when no one was; the ``Heard`` event
carries it once the voice is identified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from omoide.components.device import GUEST
from omoide.components.turn_events import Done, Heard, TurnEvent, TurnStarted


@dataclass
class Presence:
    guest_minutes: float = 10.0
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    _running: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    _devices_of: dict[str, set[str]] = field(default_factory=dict)
    _last_speaker: dict[str, tuple[str, datetime]] = field(default_factory=dict)
    _last_turn: dict[str, datetime] = field(default_factory=dict)

    async def on_event(self, event: TurnEvent) -> None:
        """Turn-event subscriber (``Assistant.observers``); never raises."""
        if isinstance(event, TurnStarted):
            self.turn_started(event.turn_id, event.user, event.device, self.clock())
        elif isinstance(event, Heard):
            self.identified(event.turn_id, event.user, self.clock())
        elif isinstance(event, Done):
            self.turn_done(event.turn_id, self.clock())

    def turn_started(self, turn_id: str, user: str, device: str | None,
                     at: datetime) -> None:
        self._running[turn_id] = (user, device)
        if device is None:
            return
        self._last_speaker[device] = (user, at)
        if user != GUEST:
            self._devices_of.setdefault(user, set()).add(device)

    def identified(self, turn_id: str, user: str, at: datetime) -> None:
        """The turn's speaker as identification heard them (``Heard`` carries the
        turn's person once the voice is identified: a guest, or another member)."""
        running = self._running.get(turn_id)
        if running is None or not user or running[0] == user:
            return
        device = running[1]
        self.turn_started(turn_id, user, device, at)

    def turn_done(self, turn_id: str, at: datetime) -> None:
        user, _device = self._running.pop(turn_id, ("", None))
        if user and user != GUEST:
            self._last_turn[user] = at

    def device_of(self, turn_id: str) -> str | None:
        """The device of a running turn (None: unknown, or none)."""
        running = self._running.get(turn_id)
        return running[1] if running else None

    def busy(self, person: str) -> bool:
        """A turn is running for ``person`` or on a robot of theirs."""
        mine = self._devices_of.get(person, set())
        return any(user == person or (device is not None and device in mine)
                   for user, device in self._running.values())

    def talked_within(self, person: str, now: datetime, span: timedelta) -> bool:
        """``person``'s last turn ended less than ``span`` before ``now``."""
        last = self._last_turn.get(person)
        return last is not None and now - last < span

    def someone_else_present(self, person: str, now: datetime) -> bool:
        """Someone else (a guest, another member) spoke last at one of ``person``'s
        robots, less than ``guest_minutes`` ago."""
        limit = timedelta(minutes=self.guest_minutes)
        for device in self._devices_of.get(person, set()):
            speaker, at = self._last_speaker.get(device, (person, now - limit))
            if speaker != person and now - at < limit:
                return True
        return False

    def new_conversation(self, person: str, now: datetime, gap: timedelta) -> bool:
        """``person``'s turn starting at ``now`` opens a conversation: none ended within
        ``gap`` before it (the previous turn is the one that ended last)."""
        last = self._last_turn.get(person)
        return last is None or now - last >= gap
