"""Announcements on a StackChan: the robot speaks without being asked (a timer went off).

An announcement is delivered like a reply with no user turn before it (the same
events through the same sink): ``llm`` (the face), ``tts start``, then
``sentence_start`` + paced Opus per sentence, then ``tts stop``. It waits for a turn in
progress to finish (at most ``TURN_WAIT_S``) so it never talks over the robot's own
reply. Messages queued while the person's robot was away are taken from the server
(``DeviceHost.take_announcements``) once the robot is back and has said hello.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from omoide.api import EmotionChosen, Sentence
from omoide_device_stackchan.connection import DeviceConnection, DeviceGone, DeviceTurnSink

if TYPE_CHECKING:
    from omoide.api import Announcement, DeviceHost
    from omoide_device_stackchan.config import StackChanConfig

log = logging.getLogger("omoide.device.stackchan")

TURN_WAIT_S = 60.0
POLL_S = 0.05


class AnnouncingService(Protocol):
    """What the announcer reads of the device service
    (:class:`omoide_device_stackchan.service.StackChanService`)."""

    @property
    def connections(self) -> dict[str, DeviceConnection]:
        """The open connections, by device id."""
        ...

    @property
    def config(self) -> StackChanConfig: ...

    @property
    def host(self) -> DeviceHost: ...


def _serves(conn: DeviceConnection, user: str) -> bool:
    """The robot is ``user``'s: paired to them, or its household counts them (a moment
    for a household's second member reaches the robot they share)."""
    if conn.identity.user == user:
        return True
    household = getattr(conn, "_household", None)
    return household is not None and user in household().members


def _ready(conn: DeviceConnection) -> bool:
    """The robot said hello and the connection is open."""
    return bool(getattr(conn, "_hello_done", False)) and conn.stats.closed_reason is None


async def speak(conn: DeviceConnection, announcement: Announcement) -> bool:
    """Say ``announcement`` on ``conn``; False if the robot went away."""
    deadline = time.monotonic() + TURN_WAIT_S
    while conn._turn_running() and time.monotonic() < deadline:
        await asyncio.sleep(POLL_S)
    sink = DeviceTurnSink(conn)
    user, emotion = conn.identity.user, announcement.emotion
    try:
        await sink.on_event(EmotionChosen(emotion=emotion, user=user))
        for text, audio in announcement.sentences:
            await sink.on_event(Sentence(text=text, emotion=emotion, audio=audio, user=user))
        if sink.tts_started:
            await conn._pacer.drain()
            await conn.send_json({"type": "tts", "state": "stop"})
    except DeviceGone:
        return False
    log.info("device %s: announced %r", conn.identity.device_id, announcement.text)
    return True


class StackChanAnnouncer:
    """Finds the connected robots of a person and speaks to them."""

    def __init__(self, service: AnnouncingService) -> None:
        self._service = service

    def _connections(self, user: str) -> list[DeviceConnection]:
        return [c for c in list(self._service.connections.values())
                if _serves(c, user) and _ready(c)]

    def reaches(self, user: str) -> bool:
        return bool(self._connections(user))

    async def announce(self, user: str, announcement: Announcement) -> bool:
        """Speak on every connected robot of ``user``; True if one of them heard it."""
        results = await asyncio.gather(*(speak(c, announcement)
                                         for c in self._connections(user)))
        return any(results)

    async def deliver_queued(self, conn: DeviceConnection) -> None:
        """Once ``conn`` has said hello, speak what was queued for its person."""
        deadline = time.monotonic() + self._service.config.hello_timeout_s + 1
        while not _ready(conn):
            if time.monotonic() > deadline or conn.stats.closed_reason is not None:
                return
            await asyncio.sleep(POLL_S)
        take: Any = getattr(self._service.host, "take_announcements", None)
        if take is None:
            return
        try:
            queued = await take(conn.identity.user)
        except Exception:
            log.exception("device %s: taking queued announcements failed",
                          conn.identity.device_id)
            return
        for announcement in queued:
            if not await speak(conn, announcement):
                log.warning("device %s left before hearing %d queued announcement(s)",
                            conn.identity.device_id, len(queued))
                return

    def watch(self, conn: DeviceConnection) -> asyncio.Task[None]:
        """Start :meth:`deliver_queued` for a new connection (cancel it when it ends)."""
        task = asyncio.create_task(self.deliver_queued(conn))
        task.add_done_callback(lambda t: None if t.cancelled() else t.exception())
        return task


async def cancel_watch(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
