"""Unsolicited messages: omoide speaks to a person without being asked (a timer went off).

:class:`Announcer` is what tools reach through :meth:`omoide.components.ToolHost.announce`.
It asks each device component whether it can reach the person now
(:meth:`omoide.components.Device.reaches`); if one can, the text is spoken (split into
sentences and synthesised like a reply) and handed to :meth:`Device.announce`. If none
can, or delivery fails, the message waits in an :class:`AnnouncementQueue` (a JSON file
in the data folder, so a restart loses nothing) until a device of that person is back
and takes it with :meth:`omoide.components.DeviceHost.take_announcements`. With
``database.url`` the messages wait in the shared database instead
(:mod:`omoide.postgres_announcements`): queued on one worker, taken once on whichever
the person's robot connects to.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omoide.components import TTS, AnnounceOutcome, Device
from omoide.pipeline.emotion import parse_emotion
from omoide.pipeline.splitter import SentenceSplitter
from omoide.private_files import open_private
from omoide.types import AudioClip, Emotion

log = logging.getLogger("omoide.announcements")

MAX_QUEUED_PER_USER = 20
MAX_TEXT_CHARS = 500


@dataclass(frozen=True)
class Announcement:
    """A message for one person; ``sentences`` carry the audio once it is rendered."""

    id: str
    user: str
    text: str
    emotion: Emotion
    created_at: datetime
    sentences: tuple[tuple[str, AudioClip | None], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "user": self.user, "text": self.text,
                "emotion": self.emotion.value, "created_at": self.created_at.isoformat()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Announcement:
        return cls(str(data["id"]), str(data["user"]), str(data["text"]),
                   Emotion(data.get("emotion", "neutral")),
                   datetime.fromisoformat(str(data["created_at"])))


class AnnouncementQueue:
    """Messages waiting for a person's device, kept in one JSON file (atomic writes).

    At most :data:`MAX_QUEUED_PER_USER` per person; older ones are dropped first.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = asyncio.Lock()

    def _read(self) -> list[Announcement]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.error("announcement queue %s is unreadable (%s); starting empty",
                      self.path, exc)
            return []
        items = raw.get("announcements", []) if isinstance(raw, dict) else []
        out = []
        for item in items:
            try:
                out.append(Announcement.from_json(item))
            except (KeyError, TypeError, ValueError):
                log.warning("dropping a malformed queued announcement: %r", item)
        return out

    def _write(self, items: Sequence[Announcement]) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open_private(tmp, "w") as f:
            f.write(json.dumps({"announcements": [a.to_json() for a in items]},
                               ensure_ascii=False, indent=1))
        os.replace(tmp, self.path)

    async def add(self, announcement: Announcement) -> None:
        async with self._lock:
            items = await asyncio.to_thread(self._read)
            items.append(announcement)
            mine = [a for a in items if a.user == announcement.user]
            drop = {a.id for a in mine[:-MAX_QUEUED_PER_USER]}
            await asyncio.to_thread(self._write, [a for a in items if a.id not in drop])

    async def take(self, user: str) -> list[Announcement]:
        """Remove and return ``user``'s queued messages, oldest first."""
        async with self._lock:
            items = await asyncio.to_thread(self._read)
            mine = [a for a in items if a.user == user]
            if mine:
                await asyncio.to_thread(self._write, [a for a in items if a.user != user])
            return mine

    async def pending(self, user: str) -> list[Announcement]:
        async with self._lock:
            return [a for a in await asyncio.to_thread(self._read) if a.user == user]

    def close(self) -> None:
        """Nothing to release for a file (the shared queue closes its pool)."""


class Announcer:
    """Delivers unsolicited messages to a person's device, or queues them."""

    def __init__(self, devices: Sequence[Device], tts: TTS | None, queue: AnnouncementQueue,
                 *, first_sentence_comma_split: bool = True) -> None:
        self.devices = list(devices)
        self.tts = tts
        self.queue = queue
        self._comma_split = first_sentence_comma_split

    async def announce(self, user: str, text: str,
                       emotion: Emotion = Emotion.NEUTRAL) -> AnnounceOutcome:
        """Say ``text`` to ``user`` now if a device of theirs is connected, else queue it."""
        text = text.strip()[:MAX_TEXT_CHARS]
        if not text:
            return AnnounceOutcome("dropped", "empty message")
        announcement = Announcement(uuid.uuid4().hex[:12], user, text, emotion,
                                    datetime.now(UTC))
        try:
            if await self._deliver(announcement):
                return AnnounceOutcome("delivered")
        except Exception:
            log.exception("announcing to %s failed; queued", user)
        try:
            await self.queue.add(announcement)
        except OSError as exc:
            log.error("cannot queue an announcement for %s: %s", user, exc)
            return AnnounceOutcome("dropped", f"cannot queue: {exc}")
        return AnnounceOutcome("queued")

    async def _deliver(self, announcement: Announcement) -> bool:
        reachable = [d for d in self.devices if d.reaches(announcement.user)]
        if not reachable:
            return False
        spoken = await self.render(announcement)
        for device in reachable:
            if await device.announce(announcement.user, spoken):
                log.info("announced to %s through %s: %s", announcement.user, device.name,
                         announcement.text)
                return True
        return False

    async def take_pending(self, user: str) -> list[Announcement]:
        """``user``'s queued messages, rendered, for a device that is back."""
        return [await self.render(a) for a in await self.queue.take(user)]

    async def render(self, announcement: Announcement) -> Announcement:
        """Split into sentences and synthesise each (a failed sentence has no audio)."""
        body = parse_emotion(announcement.text).text
        splitter = SentenceSplitter(first_sentence_comma_split=self._comma_split)
        sentences = [*splitter.feed(body), *splitter.flush()]
        rendered: list[tuple[str, AudioClip | None]] = []
        for sentence in sentences:
            audio = None
            if self.tts is not None:
                try:
                    audio = await self.tts.synthesize(sentence)
                except Exception as exc:  # noqa: BLE001 - shown without audio
                    log.warning("tts failed for announcement sentence %r: %s", sentence, exc)
            rendered.append((sentence, audio))
        return Announcement(announcement.id, announcement.user, announcement.text,
                            announcement.emotion, announcement.created_at, tuple(rendered))
