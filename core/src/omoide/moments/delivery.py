"""Delivery: each moment said once, at a good time, to the right person.

:class:`MomentScheduler` plans from stored memories each time it looks (nothing is kept
in memory that a restart would lose) and settles each moment in the
:class:`~omoide.moments.ledger.MomentLedger` before it is spoken. Two ways out:

- **pushed** (:meth:`MomentScheduler.tick`, every ``check_seconds``): to a robot of the
  person that is online and idle (a :class:`Speaker`: the announcer's path, the
  robots whose household holds the person), when no turn runs for them and no guest
  spoke to their robot lately;
- **opening a conversation** (:meth:`MomentScheduler.opener`): a stock robot connects
  only when woken, so the first reply of the person's next conversation inside the
  window begins with it (「そういえば、明日は箱根だね。」); a follow-up is only ever said
  this way.

Never in the person's quiet hours (their own, set from the console or the CLI; else
the config's for them; else the household's default) — and a push to a robot a
household shares waits while anyone taken to be near it is in theirs
(:meth:`omoide.moments.presence.Presence.near`) — never past their daily limit, never
when they switched moments off, never in a guest's turn nor while someone else is at
the robot. A pushed moment is handed to ``journal`` (the exchange journal and the
short-term history: :mod:`omoide.moments.journaling`), so the person's answer is heard
in its context; a moment opening a conversation is part of that turn's reply, journaled
with it. Every delivered moment is handed to ``on_delivered`` (the console's turn feed)
with its reasons.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from omoide.components.device import GUEST
from omoide.components.turn_events import Heard, TurnEvent
from omoide.moments.config import MomentsSettings
from omoide.moments.ledger import MomentLedger
from omoide.moments.model import Moment
from omoide.moments.planning import MemorySource, plan_moments
from omoide.moments.presence import TYPED_DEVICE, Presence
from omoide.moments.quiet_hours import QuietHours
from omoide.moments.voice_switch import VoiceSwitch
from omoide.moments.writing import write_line

if TYPE_CHECKING:
    from omoide.components import ChatModel
    from omoide.pipeline.turn import TurnRequest

log = logging.getLogger("omoide.moments")

OPENER_LEAD = "そういえば、"
IDLE_AFTER = timedelta(minutes=2)
"""A robot is idle this long after its person's last turn: a moment is not pushed into
a conversation going on (their next conversation may open with it instead)."""


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class Speaker(Protocol):
    """Who can say a line to a person's idle robot now (the announcer's path)."""

    def reaches(self, person: str) -> bool: ...

    async def say(self, person: str, text: str) -> bool:
        """Say ``text`` on a robot of ``person`` now; False when none heard it."""
        ...


@dataclass(frozen=True)
class Delivery:
    moment: Moment
    text: str
    at: datetime
    how: str   # pushed | opener

    def feed_json(self) -> dict[str, Any]:
        """The console feed's entry: a turn with no transcript, its reasons attached."""
        m = self.moment
        return {"turn_id": f"moment-{m.key}", "user": m.person, "device": None,
                "started_at": self.at.isoformat(), "at": self.at.isoformat(),
                "transcript": "", "reply": self.text, "face": "neutral",
                "interrupted": False,
                "memories": [{"id": mid, "text": fact, "kind": "moment", "score": 1.0}
                             for mid, fact in zip(m.reasons, m.facts, strict=False)],
                "profile": [], "degraded": [], "stages": {}, "tools": [],
                "moment": {"key": m.key, "kind": m.kind.value, "how": self.how,
                           "reasons": list(m.reasons), "about": m.about.isoformat()}}


class MomentScheduler:
    """Plans moments from memory and delivers each once (see the module)."""

    def __init__(self, settings: MomentsSettings, ledger: MomentLedger,
                 memories: MemorySource, people: Callable[[], Awaitable[Iterable[str]]],
                 *, timezone: str, chat: ChatModel | None = None,
                 speaker: Speaker | None = None, clock: Clock | None = None,
                 on_delivered: Callable[[Delivery], None] | None = None,
                 journal: Callable[[Delivery], Awaitable[None]] | None = None) -> None:
        self.settings = settings
        self.ledger = ledger
        self.memories = memories
        self.people = people
        self.zone = ZoneInfo(timezone)
        self.chat = chat
        self.speaker = speaker
        self.clock = clock or SystemClock()
        self.presence = Presence(settings.guest_minutes, clock=self.clock.now)
        self.on_delivered = on_delivered
        self.journal = journal
        """Told of each pushed moment once it was heard (it journals it as an exchange)."""
        self.voice = VoiceSwitch()
        self._lock = asyncio.Lock()

    # -- listening -------------------------------------------------------------------
    async def on_event(self, event: TurnEvent) -> None:
        """Turn-event subscriber: who is present and busy, 「そういうのは言わなくて
        いいよ」 heard soon after a moment, and asking for them again. Never raises."""
        await self.presence.on_event(event)
        if isinstance(event, Heard) and event.transcript and event.user \
                and event.user != GUEST and self._listens(event.turn_id):
            try:
                await self.heard(event.user, event.transcript)
            except Exception:
                log.exception("reading what %s said for the moments failed", event.user)

    async def heard(self, person: str, text: str) -> None:
        """``person`` said ``text``: maybe asks to stop moments (or to have them
        again), or answers that question. Moments switched off in the config stay off."""
        if self.settings.for_person(person)[2]:
            return
        now = self.clock.now()
        last = await self.ledger.last_delivered_at(person)
        off = await self.ledger.is_off(person)
        switched = self.voice.heard(person, text, now, last, off=off)
        if switched is not None:
            await self.ledger.set_off(person, switched, now)
            log.info("%s switched moments %s by voice", person, "off" if switched else "on")

    # -- what is planned and what may be said ----------------------------------------
    async def planned(self, person: str, now: datetime | None = None) -> list[Moment]:
        """``person``'s moments whose window has not closed, not yet said or cancelled."""
        now = now or self.clock.now()
        memories = await self.memories.current_memories(person)
        settled = await self.ledger.settled_keys(person)
        return [m for m in plan_moments(person, memories, now, self.zone)
                if m.key not in settled and m.series not in settled]

    async def quiet_hours(self, person: str) -> tuple[QuietHours, str]:
        """``person``'s quiet hours and whose they are: ``own`` (set from the console
        or the CLI), ``config`` (``moments.people.P.quiet_hours``) or ``household``
        (``moments.quiet_hours``)."""
        own = await self.ledger.quiet_hours_of(person)
        if own is not None:
            try:
                return QuietHours.parse(own), "own"
            except ValueError:
                log.error("%s's quiet hours %r in the ledger are unreadable", person, own)
        configured = self.settings.people.get(person)
        if configured is not None and configured.quiet_hours:
            return QuietHours.parse(configured.quiet_hours), "config"
        return QuietHours.parse(self.settings.quiet_hours), "household"

    async def set_quiet_hours(self, person: str, span: str | None) -> str:
        """Set ``person``'s own quiet hours (``"21:00-06:30"``; None: the config's
        again); returns the quiet hours that hold for them now. ValueError for a span
        that is not HH:MM-HH:MM."""
        own = str(QuietHours.parse(span)) if span is not None else None
        await self.ledger.set_quiet_hours(person, own, self.clock.now())
        return str((await self.quiet_hours(person))[0])

    async def _quiet_for(self, people: Iterable[str], now: datetime) -> list[str]:
        """Who of ``people`` is in their quiet hours at ``now``."""
        local = now.astimezone(self.zone)
        return [p for p in sorted(set(people))
                if (await self.quiet_hours(p))[0].contains(local)]

    async def _may_speak(self, person: str, now: datetime) -> bool:
        _quiet, limit, off = self.settings.for_person(person)
        if off or await self._quiet_for([person], now):
            return False
        if await self.ledger.is_off(person):
            return False
        day = now.astimezone(self.zone).date().isoformat()
        return await self.ledger.delivered_on(person, day) < limit

    async def due(self, person: str, now: datetime, *, pushed: bool) -> list[Moment]:
        """What may be said to ``person`` at ``now``, the window closing first first."""
        if not await self._may_speak(person, now):
            return []
        due = [m for m in await self.planned(person, now)
               if m.open_at(now) and (m.pushable or not pushed)]
        return sorted(due, key=lambda m: (m.ends, m.key))

    # -- saying ------------------------------------------------------------------------
    async def _settle(self, moment: Moment, now: datetime, how: str) -> Delivery | None:
        """Write the line and record it as said; None when it was settled meanwhile."""
        text = await write_line(self.chat, moment, now.astimezone(self.zone).date())
        day = now.astimezone(self.zone).date().isoformat()
        if not await self.ledger.record_delivered(moment, now, day, how, text):
            return None
        return Delivery(moment, text, now, how)

    def _published(self, delivery: Delivery) -> Delivery:
        log.info("moment %s said to %s (%s): %s", delivery.moment.key,
                 delivery.moment.person, delivery.how, delivery.text)
        if self.on_delivered is not None:
            try:
                self.on_delivered(delivery)
            except Exception:
                log.exception("publishing moment %s failed", delivery.moment.key)
        return delivery

    async def tick(self) -> list[Delivery]:
        """Push what is due to people whose robot is online and idle (one each)."""
        if self.speaker is None:
            return []
        now = self.clock.now()
        out = []
        async with self._lock:
            for person in sorted(set(await self.people())):
                try:
                    delivery = await self._push(person, now)
                except Exception:  # one person's memories failing stops no one else's
                    log.exception("moments for %s could not be looked at", person)
                    continue
                if delivery is not None:
                    out.append(self._published(delivery))
        return out

    async def _push(self, person: str, now: datetime) -> Delivery | None:
        assert self.speaker is not None
        if (self.presence.busy(person) or self.presence.someone_else_present(person, now)
                or self.presence.talked_within(person, now, IDLE_AFTER)
                or not self.speaker.reaches(person)):
            return None
        sleeping = await self._quiet_for(self.presence.near(person, now) - {person}, now)
        if sleeping:   # a robot they share with someone near it in their quiet hours
            return None
        for moment in await self.due(person, now, pushed=True):
            delivery = await self._settle(moment, now, "pushed")
            if delivery is None:
                continue
            if await self.speaker.say(person, delivery.text):
                await self._journaled(delivery)
                return delivery
            # nobody heard it: still due (the next look, or their next conversation)
            await self.ledger.unrecord(moment.key)
            return None
        return None

    async def _journaled(self, delivery: Delivery) -> None:
        """A pushed moment was heard: the robot spoke to the person (their answer
        continues it) and the exchange journal and short-term history carry it."""
        self.presence.spoke_to(delivery.moment.person, delivery.at)
        if self.journal is None:
            return
        try:
            await self.journal(delivery)
        except Exception:  # said and recorded in the ledger: the turn feed still shows it
            log.exception("journaling moment %s failed", delivery.moment.key)

    async def opener(self, request: TurnRequest, now: datetime | None = None) -> str | None:
        """The words a conversation's first reply begins with, when a moment is due
        for the person speaking; None for a guest, a turn inside a conversation, while
        someone else is at the robot, or when nothing is due."""
        if request.guest or not self._opens(request):
            return None
        answer = self.voice.opener(request.user)
        if answer is not None:
            return answer
        now = now or request.now or self.clock.now()
        gap = timedelta(minutes=self.settings.conversation_gap_minutes)
        if not self.presence.new_conversation(request.user, now, gap):
            return None
        if request.device is not None and self.presence.someone_else_present(
                request.user, now, request.device):
            return None   # not in front of a guest, nor of another member
        async with self._lock:
            for moment in await self.due(request.user, now, pushed=False):
                delivery = await self._settle(moment, now, "opener")
                if delivery is not None:
                    return OPENER_LEAD + self._published(delivery).text
        return None

    # -- in the person's hands -------------------------------------------------------
    async def listing(self, person: str, now: datetime | None = None) -> dict[str, Any]:
        """``person``'s moments to come (window, reasons, open now?), the ones said or
        cancelled lately, and their switch and limits (the console and the CLI)."""
        now = now or self.clock.now()
        _quiet, limit, off_in_config = self.settings.for_person(person)
        quiet, whose = await self.quiet_hours(person)
        return {"person": person, "off": off_in_config or await self.ledger.is_off(person),
                "off_in_config": off_in_config, "quiet_hours": str(quiet),
                "quiet_hours_from": whose, "max_per_day": limit,
                "upcoming": [{**m.to_json(), "open": m.open_at(now)}
                             for m in await self.planned(person, now)],
                "said": [e.to_json() for e in await self.ledger.entries(person, 20)]}

    async def cancel(self, person: str, key: str, by: str, *, every: bool = False) -> bool:
        """Never say ``person``'s planned moment ``key`` — with ``every``, nor any
        repetition of it (a daily reminder, a birthday every year); False when there
        is none."""
        now = self.clock.now()
        for moment in await self.planned(person, now):
            if moment.key == key:
                target = replace(moment, key=moment.series) if every else moment
                return await self.ledger.cancel(target, now, by)
        return False

    async def switch_off(self, person: str, off: bool) -> None:
        """``person``'s off switch (the config's ``people.P.off`` wins over it)."""
        await self.ledger.set_off(person, off, self.clock.now())

    def _listens(self, turn_id: str) -> bool:
        """Whether the turn's words are read for 「そういうのは言わなくていいよ」: only
        where its reply could ask back (a robot's turn; a typed one with ``text_turns``)."""
        device = self.presence.device_of(turn_id)
        return device not in (None, TYPED_DEVICE) or self.settings.text_turns

    def _opens(self, request: TurnRequest) -> bool:
        """Whether this kind of turn may begin with a moment: a robot's (the people
        moments are for); a typed one when ``text_turns``; never a chat client's, which
        keeps its own history and did not ask."""
        if request.conversation is not None:
            return False
        if request.device in (None, TYPED_DEVICE):
            return self.settings.text_turns
        return True

    async def run(self) -> None:
        """Look for moments to push every ``check_seconds`` until cancelled (the first
        look after one interval: a server starting has other work first)."""
        while True:
            await asyncio.sleep(self.settings.check_seconds)
            try:
                await self.tick()
            except Exception:
                log.exception("looking for moments failed; trying again later")
