"""Turning the device's microphone stream into utterances.

:class:`UtteranceBuffer` keeps the audio since ``listen start`` (only a short
pre-roll before speech, so memory stays bounded while nobody talks).
:class:`EnergyEndOfSpeech` is the fallback end-of-speech detector used when the
server has no VAD configured: frame RMS with the same hysteresis shape as the core's
VAD-based detector. :class:`TurnEnd` decides, once the detector hears speech stop,
whether the person is finished or only pausing (the server's ``turn`` stage), so a
mid-sentence pause does not cut the utterance in two. :class:`HeardWhileSpoken` feeds
one utterance to the server's recognition stream while it is spoken.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import numpy as np

from omoide.api import FloatArray, InvalidInput, StreamingRecognition, VadEvent

if TYPE_CHECKING:
    from omoide.api import RecognitionStream, TurnDetector

log = logging.getLogger("omoide.device.stackchan")

EARLY_SILENCE_MS = 150
"""Silence inside speech after which the turn detector starts judging, before the VAD's
own silence says the voice stopped: its answer is ready when the pause begins."""


class UtteranceBuffer:
    """16 kHz samples since listening started, addressed by absolute sample index."""

    def __init__(self, sample_rate: int = 16000) -> None:
        self.sample_rate = sample_rate
        self._chunks: list[FloatArray] = []
        self._first = 0          # absolute index of the first kept sample
        self._total = 0          # absolute index one past the last sample

    @property
    def end(self) -> int:
        return self._total

    @property
    def kept_seconds(self) -> float:
        return (self._total - self._first) / self.sample_rate

    def append(self, samples: FloatArray) -> None:
        self._chunks.append(samples)
        self._total += len(samples)

    def drop_before(self, index: int) -> None:
        """Forget samples before absolute ``index`` (whole chunks only)."""
        while self._chunks and self._first + len(self._chunks[0]) <= index:
            self._first += len(self._chunks[0])
            self._chunks.pop(0)

    def take(self, start: int, end: int | None = None) -> FloatArray:
        """Samples in ``[start, end)`` that are still kept."""
        if not self._chunks:
            return np.zeros(0, dtype=np.float32)
        data = np.concatenate(self._chunks)
        lo = max(0, start - self._first)
        hi = len(data) if end is None else max(lo, end - self._first)
        return data[lo:hi].astype(np.float32, copy=False)


class EnergyEndOfSpeech:
    """End of speech by frame energy: a stand-in for a VAD (quiet rooms only).

    Speech starts when a 30 ms frame's RMS exceeds ``threshold`` and ends after
    ``min_silence_ms`` below ``threshold / 2``; bursts shorter than ``min_speech_ms``
    are ignored.
    """

    def __init__(self, threshold: float = 0.015, min_silence_ms: int = 700,
                 min_speech_ms: int = 200, sample_rate: int = 16000) -> None:
        self.threshold = threshold
        self.min_silence_ms = min_silence_ms
        self.min_speech_ms = min_speech_ms
        self.sample_rate = sample_rate
        self._frame = sample_rate * 30 // 1000
        self._pending = np.zeros(0, dtype=np.float32)
        self._pos = 0
        self._in_speech = False
        self._started = 0
        self._silence = 0

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    @property
    def silence_from_s(self) -> float | None:
        """Where the silence under way inside speech began, in seconds (None: voiced)."""
        if not self._in_speech or not self._silence:
            return None
        return (self._pos - self._silence) / self.sample_rate

    def push(self, samples: FloatArray) -> list[VadEvent]:
        self._pending = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        events: list[VadEvent] = []
        n, sr = self._frame, self.sample_rate
        while len(self._pending) >= n:
            frame, self._pending = self._pending[:n], self._pending[n:]
            rms = float(np.sqrt(np.mean(frame.astype(np.float64) ** 2)))
            self._pos += n
            if not self._in_speech:
                if rms >= self.threshold:
                    self._in_speech, self._started, self._silence = True, self._pos - n, 0
                    events.append(VadEvent("speech_start", self._started / sr))
                continue
            self._silence = self._silence + n if rms < self.threshold / 2 else 0
            if self._silence * 1000 >= self.min_silence_ms * sr:
                self._in_speech = False
                speech = self._pos - self._silence - self._started
                if speech * 1000 >= self.min_speech_ms * sr:
                    events.append(VadEvent("speech_end", (self._pos - self._silence) / sr))
                self._silence = 0
        return events


class TurnEnd:
    """Finished or pausing? One utterance's state after its detector heard speech stop.

    Without a turn detector, speech stopping ends the utterance (the VAD's silence is
    the endpoint). With one, :meth:`pause` asks it in the background with the audio so
    far and :meth:`due` says, as more silence arrives, when the turn ends: at once when
    judged finished, at the detector's ceiling when judged unfinished (or while it has
    not answered), after its ``fallback_silence_ms`` when it failed. Speech again
    (:meth:`resume`) continues the same utterance; a burst too short to be speech
    (:meth:`restore`) returns to the pause it interrupted.

    The judgement starts early: :meth:`listen`, told after every frame where the
    detector's silence under way began, judges the utterance up to there once
    ``early_ms`` of silence passed (on the detector's worker thread), and :meth:`pause`
    at the same instant takes that judgement instead of starting one: the VAD's longer
    silence is then mostly spent judging. Speech again before the pause discards it.
    When that judgement (with the words heard up to there, when read) already ends the
    turn after the silence so far, :meth:`ends_early` says so before the detector's own
    silence has passed: a sure end waits ``early_ms`` of silence, not the VAD's.

    When the detector reads text (``TurnDetector.reads_text``) and the utterance is
    recognised while spoken, :attr:`hearing` (the recognition stream's ``heard_so_far``)
    is asked alongside each judgement; once it answers, the wait is the detector's for
    the judgement and the text, until then the judgement's alone.
    """

    def __init__(self, detector: TurnDetector | None, sample_rate: int = 16000) -> None:
        self.detector = detector
        self.sample_rate = sample_rate
        self.paused_at: int | None = None
        """Absolute sample index where the voice stopped, while pausing."""
        self.probability: float | None = None
        self._judgement: asyncio.Future[float] | None = None
        self._suspended: tuple[int, asyncio.Future[float] | None] | None = None
        self.early_ms = EARLY_SILENCE_MS
        self._early: tuple[int, asyncio.Future[float]] | None = None
        self._early_heard: tuple[int, asyncio.Future[str | None] | None] | None = None
        self.early_used = 0
        """Pauses whose judgement had started early (for tests and benchmarks)."""
        self.ended_early = 0
        """Turns ended by an early judgement before the detector's pause (idem)."""
        self.hearing: Callable[[float], Awaitable[str | None]] | None = None
        """What the recogniser heard in the utterance's first seconds, when it can say
        (set by the connection: the recognition stream's ``heard_so_far``)."""
        self.text: str | None = None
        """The text the last decision read (None: none was known)."""
        self._heard: asyncio.Future[str | None] | None = None
        self._suspended_heard: asyncio.Future[str | None] | None = None

    @property
    def pausing(self) -> bool:
        return self.paused_at is not None

    def listen(self, silence_from_s: float | None, buffer: UtteranceBuffer,
               speech_from: int | None) -> None:
        """After a frame: ``silence_from_s`` is where the end-of-speech detector's silence
        under way began (None while voiced). Once it lasted ``early_ms``, the utterance
        from ``speech_from`` up to there is judged in the background; what was heard up
        to there is asked from the first silent frame (a recognition pass takes longer
        than a judgement, and one that runs while the person speaks on is an ordinary
        pass)."""
        if self.detector is None or self.paused_at is not None or speech_from is None:
            return
        if silence_from_s is None:
            self._drop_early()
            return
        at = int(silence_from_s * self.sample_rate)   # as the pause's instant is read
        if self._early_heard is None or self._early_heard[0] != at:
            self._drop_early()
            self._early_heard = (at, self._ask_heard(buffer.take(speech_from, at)))
        if (buffer.end - at) * 1000 < self.early_ms * self.sample_rate:
            return
        if self._early is not None and self._early[0] == at:
            return
        audio = buffer.take(speech_from, at)
        if len(audio):
            self._early = (at, asyncio.ensure_future(self.detector.finished_probability(audio)))

    def ends_early(self, now: int) -> int | None:
        """Where the voice stopped, when the judgement started early there (and the
        words heard up to there, when they are read) ends the turn after the silence up
        to sample ``now``, before the end-of-speech detector said the voice stopped;
        None otherwise (no such judgement, not answered yet, or it waits longer)."""
        if self.detector is None or self.paused_at is not None or self._early is None:
            return None
        at, judgement = self._early
        if not judgement.done() or judgement.cancelled() or judgement.exception():
            return None
        text = None
        heard = self._early_heard
        if heard is not None and heard[0] == at and heard[1] is not None:
            if not heard[1].done():
                return None     # the words are read: wait for them
            if not heard[1].cancelled() and heard[1].exception() is None:
                text = heard[1].result()
        probability = judgement.result()
        silence_ms = (now - at) * 1000 / self.sample_rate
        if silence_ms < self.detector.silence_to_wait_ms(probability, text):
            return None
        self.probability, self.text = probability, text
        self.ended_early += 1
        return at

    def _ask_heard(self, audio: FloatArray) -> asyncio.Future[str | None] | None:
        """What was heard in ``audio`` (the utterance up to the pause), when it counts."""
        if self.hearing is None or self.detector is None or not self.detector.reads_text \
                or not len(audio):
            return None
        return asyncio.ensure_future(self.hearing(len(audio) / self.sample_rate))

    def pause(self, audio: FloatArray, at: int) -> None:
        """The voice stopped at ``at``; ``audio`` is the utterance up to there."""
        early, self._early = self._early, None
        heard, self._early_heard = self._early_heard, None
        self.cancel()
        self.paused_at = at
        if early is not None and early[0] == at:
            self._judgement = early[1]
            self.early_used += 1
        elif early is not None:
            _forget(early[1])
        if heard is not None and heard[0] == at:
            self._heard = heard[1]
        elif heard is not None and heard[1] is not None:
            _forget(heard[1])
        if self._judgement is None and self.detector is not None and len(audio):
            self._judgement = asyncio.ensure_future(self.detector.finished_probability(audio))
        if self._heard is None:
            self._heard = self._ask_heard(audio)

    def _drop_early(self) -> None:
        if self._early is not None:
            _forget(self._early[1])
            self._early = None
        if self._early_heard is not None:
            if self._early_heard[1] is not None:
                _forget(self._early_heard[1])
            self._early_heard = None

    def resume(self) -> None:
        """Speech again inside the pause: the utterance goes on."""
        self._drop_early()
        if self.paused_at is not None:
            self._suspended = (self.paused_at, self._judgement)
            self._suspended_heard = self._heard
        self.paused_at, self._judgement, self._heard = None, None, None

    def restore(self) -> bool:
        """The speech after the pause was too short to count: pause again as before.
        False when there was no pause to return to."""
        if self._suspended is None:
            return False
        self.paused_at, self._judgement = self._suspended
        self._heard, self._suspended_heard = self._suspended_heard, None
        self._suspended = None
        return True

    def due(self, now: int) -> bool:
        """True when the silence since the pause (up to sample ``now``) ends the turn."""
        if self.paused_at is None:
            return False
        silence_ms = (now - self.paused_at) * 1000 / self.sample_rate
        if self.detector is None:
            return True
        judgement = self._judgement
        if judgement is None:
            return silence_ms >= self.detector.silence_to_wait_ms(None)
        if not judgement.done():
            return silence_ms >= self.detector.config.max_silence_ms
        try:
            self.probability = judgement.result()
        except Exception as exc:  # noqa: BLE001 - silence-only endpointing takes over
            log.warning("turn detector failed (%s); ending the turn on silence", exc)
            self.probability = None
            self._judgement = None
            return silence_ms >= self.detector.silence_to_wait_ms(None)
        self.text = self._heard_text()
        return silence_ms >= self.detector.silence_to_wait_ms(self.probability, self.text)

    def _heard_text(self) -> str | None:
        heard = self._heard
        if heard is None or not heard.done():
            return None
        try:
            return heard.result()
        except BaseException as exc:  # noqa: BLE001 - no text: the judgement alone decides
            log.debug("what was heard so far is not known (%r)", exc)
            self._heard = None
            return None

    def cancel(self) -> None:
        """Forget the pause (the utterance ended or listening restarted)."""
        for pending in (self._judgement, self._suspended[1] if self._suspended else None,
                        self._heard, self._suspended_heard):
            if pending is not None:
                _forget(pending)
        self._drop_early()
        self.paused_at, self._judgement, self._suspended = None, None, None
        self._heard, self._suspended_heard = None, None


def _forget(pending: asyncio.Future[float] | asyncio.Future[str | None]) -> None:
    """Cancel a judgement no longer wanted (or retrieve its outcome, so that no "never
    retrieved" warning is logged)."""
    if not pending.done():
        pending.cancel()
    else:
        with contextlib.suppress(BaseException):
            pending.exception()


class HeardWhileSpoken:
    """One utterance's recognition stream (``DeviceHost.open_recognition``) while the
    person speaks.

    A streaming recogniser's stream is fed every chunk as it arrives (:meth:`feed`),
    the pauses and the silence before the turn ends included, so at the end only the
    tail is left to decode. The buffering stream of a recogniser that cannot stream
    gets nothing until :meth:`hand_over`, and then exactly the utterance's audio: its
    transcript is the one the whole utterance sent with the turn gives, byte for byte.
    """

    def __init__(self, stream: RecognitionStream) -> None:
        self.stream = stream
        self.live = isinstance(stream, StreamingRecognition)
        """The recogniser decodes while the audio arrives."""

    def feed(self, samples: FloatArray) -> bool:
        """Give the stream audio heard just now; False when it refused it (too long,
        not finite): the turn then recognises the audio it is sent."""
        if not self.live or not len(samples):
            return True
        try:
            self.stream.feed(samples)
        except InvalidInput as exc:
            log.warning("recognition while speaking stopped (%s); the utterance is"
                        " recognised at its end", exc)
            return False
        return True

    def hand_over(self, audio: FloatArray) -> RecognitionStream | None:
        """The stream for the turn that answers the utterance ``audio``, or None when it
        cannot take it (the turn then recognises ``audio``)."""
        if self.live:
            return self.stream
        try:
            self.stream.feed(audio)
        except InvalidInput:
            return None
        return self.stream
