"""Devices: how robots and other clients reach omoide (HTTP routes, WebSockets).

A device component contributes a FastAPI router built against a
:class:`DeviceHost`, the narrow face of the assistant a device may use.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from omoide.components.base import Component, ComponentConfig
from omoide.errors import InvalidInput
from omoide.user_ids import validate_user_id

if TYPE_CHECKING:
    from fastapi import APIRouter

    from omoide.announcements import Announcement
    from omoide.components.asr import RecognitionStream
    from omoide.components.simulated_device import SimulatedDeviceClient
    from omoide.components.turn import TurnDetector
    from omoide.components.turn_events import TurnEventSink
    from omoide.components.vad import EndOfSpeechDetector
    from omoide.pipeline.turn import TurnRequest, TurnResult, TurnSink
    from omoide.types import AudioClip


GUEST = "guest"
"""The label of a guest turn (``TurnRequest.guest``): its trace and feed say ``guest``;
no one's memory is read or written for it."""

MAX_HOUSEHOLD_MEMBERS = 16


@dataclass(frozen=True)
class Household:
    """The people one robot serves, and who answers when no voice is recognised.

    ``members`` are person ids (each a valid user id, no repeats, at least one), in
    the order they joined. ``default_person`` is the member whose memory a turn uses
    when no member's voice is identified; None means a *guest*: such a turn reads and
    writes no one's memory (``TurnRequest.guest``). A robot paired to one person is a
    household of one whose default is that person (:meth:`of_one`).

    Speaker identification (``TurnRequest.household``, :mod:`omoide.voices`) chooses
    among the enrolled ``members`` through :meth:`person_for`; in a household where no
    one is enrolled every turn is the default person's.
    """

    members: tuple[str, ...]
    default_person: str | None

    def __post_init__(self) -> None:
        if not self.members:
            raise InvalidInput("a household needs at least one member")
        if len(self.members) > MAX_HOUSEHOLD_MEMBERS:
            raise InvalidInput(f"a household has at most {MAX_HOUSEHOLD_MEMBERS} members")
        for person in self.members:
            validate_user_id(person)
        if len(set(self.members)) != len(self.members):
            raise InvalidInput("a household lists each member once")
        if self.default_person is not None and self.default_person not in self.members:
            raise InvalidInput(f"the default person {self.default_person!r} is not a "
                               "member of the household")

    @classmethod
    def of_one(cls, person: str) -> Household:
        """The household of a robot paired to ``person`` alone (as pairing always was)."""
        return cls((person,), person)

    @property
    def guest_by_default(self) -> bool:
        """True when a voice no one recognised is a guest (no ``default_person``)."""
        return self.default_person is None

    def person_for(self, identified: str | None = None) -> str | None:
        """Whose memory a turn uses: ``identified`` when it is a member, else the
        default person; None for a guest. A voice identified as someone outside the
        household is treated as no one recognised."""
        if identified is not None and identified in self.members:
            return identified
        return self.default_person


class DeviceHost(Protocol):
    """What the server offers a device plugin."""

    data_dir: Path
    """Where the plugin may keep state (pairings, tokens), one sub-folder per plugin.
    The server's host also has ``database_url`` (``database.url``, or None): state
    several workers must share goes there (``omoide.api.open_pool``); a host without
    the attribute (a test's) means none."""

    async def run_turn(self, request: TurnRequest,
                       sink: TurnEventSink | TurnSink) -> TurnResult:
        """Run one turn (audio or text) and stream its events into ``sink``
        (:mod:`omoide.components.turn_events`: the device shows ``Heard``, the face of
        ``EmotionChosen`` and plays each ``Sentence``; an older ``TurnSink`` with
        ``on_transcript`` / ``on_emotion`` / ``on_sentence`` is still accepted).

        Cancelling the awaiting task is barge-in: speech stops, queued sentences
        are dropped, what was already said is journaled.
        """
        ...

    async def open_recognition(self, user: str, sample_rate: int, *,
                               guest: bool = False) -> RecognitionStream | None:
        """A recognition stream for ``user``'s utterance that is starting, biased as a
        turn's recognition is, or None (no ASR, or not ready): the device then sends the
        audio with the turn. The device feeds it while the person speaks and passes it as
        ``TurnRequest.recognition``; one it does not hand to a turn it cancels. A
        ``guest`` utterance is biased with no one's memory words."""
        ...

    def new_end_of_speech_detector(self) -> EndOfSpeechDetector | None:
        """A fresh server-side VAD stream (16 kHz), or None when no VAD is configured."""
        ...

    def turn_detector(self) -> TurnDetector | None:
        """The end-of-turn detector (finished or pausing?) when one is configured and
        ready, else None: the VAD's silence alone ends a turn."""
        ...

    async def session_ended(self, user: str) -> None:
        """Tell the assistant a user's session closed (schedules memory extraction)."""
        ...

    async def synthesize(self, text: str) -> AudioClip | None:
        """A fixed line (a greeting, a goodbye) in the configured TTS voice, or None when
        no TTS is ready or it failed. Not a turn: nothing is journaled or traced."""

    async def take_announcements(self, user: str) -> list[Announcement]:
        """Messages queued for ``user`` while no device of theirs could speak (a timer
        that went off), rendered with audio; taking them removes them from the queue.
        A device calls this when one of ``user``'s robots is back and can speak."""
        ...


class DeviceConfig(ComponentConfig):
    pass


class Device(Component[DeviceConfig]):
    kind: ClassVar[str] = "device"
    Config: ClassVar[type[DeviceConfig]] = DeviceConfig
    public_paths: ClassVar[tuple[str, ...]] = ()
    """URL path prefixes this device serves to robots and browser clients without the
    management token (``("/xiaozhi/",)``): the device authenticates them itself (device
    tokens, pairing) and may answer CORS there. Every other route the device's router
    adds (a device list for the console, say) is management API and needs the token."""

    @abstractmethod
    def router(self, host: DeviceHost) -> APIRouter:
        """Routes this device adds to the server; called once when the app is built."""

    # -- unsolicited messages (optional) -------------------------------------------------
    def reaches(self, user: str) -> bool:
        """True when a device of ``user`` is connected and can be spoken to right now.

        Devices that cannot speak unprompted keep this default (False): the message is
        queued for :meth:`DeviceHost.take_announcements`."""
        return False

    async def announce(self, user: str, announcement: Announcement) -> bool:
        """Speak ``announcement`` (sentences with audio) on ``user``'s device without a
        turn; True when it was delivered. Never raises for a device that went away."""
        return False

    # -- a simulated robot (optional) ----------------------------------------------------
    @classmethod
    def simulated_client(cls, base_url: str, *, management_headers: dict[str, str],
                         speed: float = 1.0, device_id: str | None = None
                         ) -> SimulatedDeviceClient | None:
        """A new simulated device of this kind that talks to the omoide at ``base_url``
        (``omoide demo`` uses it), or None when the plugin ships no simulator (the default).

        ``management_headers`` authenticate management API calls (pairing it, as its owner
        would); ``speed`` above 1 sends its speech faster than real time; ``device_id`` is
        the id it presents (default: a new random one)."""
        return None
