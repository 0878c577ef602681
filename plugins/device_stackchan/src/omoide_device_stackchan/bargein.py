"""Server-side voice barge-in for clients without echo cancellation.

A client that keeps streaming its microphone while it plays our reply (a browser, or
py-xiaozhi in realtime mode, neither announcing ``aec``) sends us the reply's echo
mixed with whatever the user says. A VAD would call the echo speech, so the decision
is made on energy against an estimate of the echo instead:

- every downlink frame's level is noted with the time the robot plays it;
- the reference is the loudest frame played in the last ``window_s`` (the echo comes
  back after network and playback delays we don't know exactly);
- the echo path's gain (how loud our own voice comes back) is learned during the reply
  as the median ratio of uplink to reference level, which the echo dominates as long
  as the user is quiet;
- the uplink counts as the user talking over the reply when it is ``margin_db`` louder
  than gain x reference (and above ``floor``) for ``min_ms`` (quiet frames in between
  count against it, so one loud clap is not enough).

Nothing is decided until ``calibration_ms`` of the reply has been heard back. This is
a gate, not an echo canceller: the audio that passes it is not cleaned, it only
interrupts the reply and starts the user's next utterance. That utterance starts at its
first voiced frame, not where the gate fired (``min_ms`` and more later): every chunk
is marked voiced when it stands out from the echo by half the margin (or, before
calibration, from the floor), and :meth:`EchoGate.recent` goes back over voiced chunks
(gaps up to ``gap_ms`` between words) to the first, plus ``pre_roll_ms``.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from omoide.api import FloatArray


def rms(samples: FloatArray) -> float:
    if len(samples) == 0:
        return 0.0
    return float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))


class EchoGate:
    """Decides, frame by frame, whether the uplink is the user talking over the reply."""

    def __init__(self, *, margin_db: float = 10.0, min_ms: int = 300,
                 floor: float = 0.015, window_s: float = 1.0, calibration_ms: int = 480,
                 history_s: float = 2.0, keep_ms: int = 6000, gap_ms: int = 300,
                 pre_roll_ms: int = 300, sample_rate: int = 16000) -> None:
        self.margin = 10 ** (margin_db / 20)
        self.min_ms = min_ms
        self.floor = floor
        self.window_s = window_s
        self.calibration_ms = calibration_ms
        self.history_s = history_s
        self.sample_rate = sample_rate
        self._played: deque[tuple[float, float]] = deque()    # (plays until, level)
        self._ratios: deque[tuple[float, float]] = deque()    # (at, uplink/reference)
        self._kept: deque[tuple[FloatArray, bool]] = deque()    # (chunk, voiced)
        self._kept_samples = 0
        self._keep = sample_rate * keep_ms // 1000
        self._gap = sample_rate * gap_ms // 1000
        self._pre_roll = sample_rate * pre_roll_ms // 1000
        self._heard_ms = 0.0
        self._loud_ms = 0.0
        self.fired = False

    def reset(self) -> None:
        """A new reply starts: forget the last one's echo."""
        self._played.clear()
        self._ratios.clear()
        self._kept.clear()
        self._kept_samples = 0
        self._heard_ms = self._loud_ms = 0.0
        self.fired = False

    def played(self, level: float, until: float) -> None:
        """A downlink frame of RMS ``level`` plays until ``until`` (perf_counter s)."""
        self._played.append((until, level))

    def _reference(self, now: float) -> float:
        while self._played and self._played[0][0] < now - self.window_s:
            self._played.popleft()
        return max((level for until, level in self._played
                    if now - self.window_s <= until), default=0.0)

    def _echo_gain(self, now: float) -> float | None:
        while self._ratios and self._ratios[0][0] < now - self.history_s:
            self._ratios.popleft()
        if self._heard_ms < self.calibration_ms or not self._ratios:
            return None
        return float(np.median([r for _, r in self._ratios]))

    def push(self, samples: FloatArray, now: float) -> bool:
        """One uplink chunk (16 kHz) at ``now``; True once the user talks over the reply."""
        level, reference = rms(samples), self._reference(now)
        gain = self._echo_gain(now)
        echo = 0.0 if gain is None else gain * reference
        self._keep_chunk(samples, level > max(self.floor, np.sqrt(self.margin) * echo))
        if self.fired:
            return True
        ms = 1000 * len(samples) / self.sample_rate
        if reference > 0:
            self._heard_ms += ms
            # The user's own voice would drag the learned gain up; a loud frame that
            # already counts as barge-in is kept out of the history.
            if gain is None or level <= self.margin * gain * reference:
                self._ratios.append((now, level / reference))
        if gain is None:
            return False
        loud = level > max(self.floor, self.margin * gain * reference)
        self._loud_ms = self._loud_ms + ms if loud else max(0.0, self._loud_ms - ms)
        self.fired = self._loud_ms >= self.min_ms
        return self.fired

    def _keep_chunk(self, samples: FloatArray, voiced: bool) -> None:
        self._kept.append((samples, voiced))
        self._kept_samples += len(samples)
        while self._kept and self._kept_samples - len(self._kept[0][0]) >= self._keep:
            self._kept_samples -= len(self._kept.popleft()[0])

    def recent(self) -> FloatArray:
        """The user's utterance so far: from its first voiced chunk (going back over
        voiced chunks with gaps of at most ``gap_ms``, within ``keep_ms``) minus
        ``pre_roll_ms``, to now."""
        if not self._kept:
            return np.zeros(0, dtype=np.float32)
        chunks = list(self._kept)
        first, gap = len(chunks), 0
        for i in range(len(chunks) - 1, -1, -1):
            samples, voiced = chunks[i]
            if voiced:
                first, gap = i, 0
            elif first < len(chunks):
                gap += len(samples)
                if gap > self._gap:
                    break
        if first == len(chunks):     # nothing voiced kept: the last pre-roll
            first = len(chunks) - 1
        pre, start = 0, first
        while start > 0 and pre < self._pre_roll:
            start -= 1
            pre += len(chunks[start][0])
        return np.concatenate([c for c, _ in chunks[start:]]).astype(np.float32, copy=False)
