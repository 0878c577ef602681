"""Who is at a robot and whether it is busy, read from the turns' events.

A turn running for a person (or anyone at a robot that person used) makes them busy:
nothing is pushed over a turn. Someone else speaking at a robot — a guest, or another
member of its household — makes it someone else's for ``guest_minutes``: nothing of a
person's is pushed to a robot where another is present, nor opens their conversation
there. This is the seam for speaker identification: a turn's ``user`` is whoever the
household's identification (or its default person) said was speaking, ``guest`` when
no one was; the ``Heard`` event carries it once the voice is identified.

A member is also taken to be *near* the robot they last spoke to, for
:data:`NEAR_FOR` (speaking to another robot moves them): a robot a household shares
keeps the quiet hours of everyone near it, not only of the person a moment is for.
A robot only one person uses is theirs alone; a typed turn is at no robot. What is
not heard is not known: after a restart, or for a member who never spoke to a robot,
only the person's own quiet hours count.

A moment pushed to a person counts as the robot speaking to them
(:meth:`Presence.spoke_to`): their answer right after continues that conversation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from omoide.components.device import GUEST
from omoide.components.turn_events import Done, Heard, TurnEvent, TurnStarted

TYPED_DEVICE = "http"
"""The ``device`` of a typed turn (``POST /v1/turns``, the console): no robot, no place
anyone is at."""
NEAR_FOR = timedelta(hours=12)
"""How long a member is taken to be near the robot they last spoke to."""


@dataclass
class Presence:
    guest_minutes: float = 10.0
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    _running: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    _devices_of: dict[str, set[str]] = field(default_factory=dict)
    _heard: dict[str, dict[str, datetime]] = field(default_factory=dict)
    """Per robot, when each speaker (a member, or ``guest``) was last heard there."""
    _last_robot: dict[str, tuple[str, datetime]] = field(default_factory=dict)
    _last_turn: dict[str, datetime] = field(default_factory=dict)
    _before: dict[str, tuple[datetime | None, tuple[str, datetime] | None]] = field(
        default_factory=dict)
    """Per running turn: what was known of its first speaker before it started (put
    back when identification says someone else was speaking)."""

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
        if device is None or device == TYPED_DEVICE:
            return
        heard = self._heard.setdefault(device, {})
        self._before.setdefault(turn_id, (heard.get(user), self._last_robot.get(user)))
        heard[user] = at
        if user != GUEST:
            self._devices_of.setdefault(user, set()).add(device)
            self._last_robot[user] = (device, at)

    def identified(self, turn_id: str, user: str, at: datetime) -> None:
        """The turn's speaker as identification heard them (``Heard`` carries the
        turn's person once the voice is identified: a guest, or another member); the
        person the turn started as was not heard after all."""
        running = self._running.get(turn_id)
        if running is None or not user or running[0] == user:
            return
        assumed, device = running
        heard_before, robot_before = self._before.pop(turn_id, (None, None))
        if device is not None:
            self._put_back(device, assumed, heard_before, robot_before)
        self.turn_started(turn_id, user, device, at)

    def _put_back(self, device: str, person: str, heard: datetime | None,
                  robot: tuple[str, datetime] | None) -> None:
        if heard is None:
            self._heard.get(device, {}).pop(person, None)
        else:
            self._heard.setdefault(device, {})[person] = heard
        if robot is None:
            self._last_robot.pop(person, None)
        else:
            self._last_robot[person] = robot

    def turn_done(self, turn_id: str, at: datetime) -> None:
        self._before.pop(turn_id, None)
        user, _device = self._running.pop(turn_id, ("", None))
        if user and user != GUEST:
            self._last_turn[user] = at

    def spoke_to(self, person: str, at: datetime) -> None:
        """The robot said something to ``person`` unprompted (a pushed moment): their
        reply right after continues it, as the answer to a turn would."""
        self._last_turn[person] = at

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

    def someone_else_present(self, person: str, now: datetime,
                             device: str | None = None) -> bool:
        """Someone else (a guest, another member) spoke at ``device`` — by default at
        any of ``person``'s robots — less than ``guest_minutes`` ago."""
        limit = timedelta(minutes=self.guest_minutes)
        robots = {device} if device is not None else self._devices_of.get(person, set())
        return any(speaker != person and now - at < limit
                   for robot in robots for speaker, at in self._heard.get(robot, {}).items())

    def near(self, person: str, now: datetime) -> set[str]:
        """The members taken to be near ``person``'s robots now: everyone whose last
        turn was at one of them less than :data:`NEAR_FOR` ago (``person`` among them
        when they were)."""
        robots = self._devices_of.get(person, set())
        return {who for who, (robot, at) in self._last_robot.items()
                if robot in robots and now - at < NEAR_FOR}

    def new_conversation(self, person: str, now: datetime, gap: timedelta) -> bool:
        """``person``'s turn starting at ``now`` opens a conversation: none ended within
        ``gap`` before it (the previous turn is the one that ended last)."""
        last = self._last_turn.get(person)
        return last is None or now - last >= gap
