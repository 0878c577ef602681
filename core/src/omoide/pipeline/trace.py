"""Per-turn traces: when each stage started and ended, and which component ran it.

A :class:`TurnTrace` is built from the turn's events
(:mod:`omoide.components.turn_events`): subscribe :meth:`TurnTrace.on_event` to the
turn's publisher and its spans and tool calls follow from what the events report.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omoide.components.turn_events import (
    FirstToken,
    ReplyEnded,
    Sentence,
    StageEnded,
    StageStarted,
    ToolCalled,
    TurnEvent,
    TurnStarted,
)
from omoide.private_files import open_private, private_folder

log = logging.getLogger("omoide.trace")

STAGES = ("end_of_speech", "speaker", "asr", "retrieve", "prompt", "chat_first_token",
          "first_sentence_audio", "chat", "tts", "done")


@dataclass
class Span:
    start_ms: float
    end_ms: float | None = None
    component: str | None = None
    error: str | None = None
    note: str | None = None


@dataclass
class TurnTrace:
    """Timings of one turn, in ms relative to ``t0`` (end of speech, or request arrival)."""

    turn_id: str
    user: str
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    t0: float = field(default_factory=time.perf_counter)
    spans: dict[str, Span] = field(default_factory=dict)
    device: str | None = None
    """Which device the turn came from (a robot's device id, "http"), if known."""
    guest: bool = False
    """A guest's turn: no one's memory was read or written (``"guest": true`` in JSON)."""
    speaker: dict[str, Any] | None = None
    """Who the voice was identified as (person, voice, score, margin, reason, note), when
    the turn identified one (``"speaker"`` in JSON)."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """Each tool call: name, source (tool component or ``device``), start and duration
    in ms, outcome (ok, error, timeout, refused, needs_confirmation, confirmed,
    cancelled, unconfirmed) and the error, if any."""

    async def on_event(self, event: TurnEvent) -> None:
        """Subscriber of the turn's events: the trace follows what they report."""
        self.observe(event)

    def observe(self, event: TurnEvent) -> None:
        """Take one event into the trace (the synchronous form of :meth:`on_event`)."""
        if isinstance(event, TurnStarted):
            self.started_at = event.started_at
            self.device = event.device
            self.t0 = event.at if event.end_of_speech_at is None else event.end_of_speech_at
            self.mark("end_of_speech", at=event.at)
        elif isinstance(event, StageStarted):
            self.begin(event.stage, event.component, at=event.at)
        elif isinstance(event, StageEnded):
            self.end(event.stage, error=event.error, note=event.note, at=event.at)
        elif isinstance(event, FirstToken):
            self.mark("chat_first_token", event.component, at=event.at)
        elif isinstance(event, Sentence) and event.audio is not None:
            self.mark("first_sentence_audio", event.component, at=event.at)
        elif isinstance(event, ToolCalled):
            self.tool_call(event.name, event.source, self.ms_at(event.started_at),
                           event.outcome, event.error, at=event.at)
        elif isinstance(event, ReplyEnded):
            self.mark("done", note=event.note, at=event.at)

    def now_ms(self) -> float:
        return self.ms_at(time.perf_counter())

    def ms_at(self, at: float) -> float:
        """``at`` (a ``time.perf_counter()`` reading) in ms after ``t0``."""
        return (at - self.t0) * 1000.0

    def _ms(self, at: float | None) -> float:
        return self.now_ms() if at is None else self.ms_at(at)

    def begin(self, stage: str, component: str | None = None, *,
              at: float | None = None) -> None:
        self.spans[stage] = Span(self._ms(at), None, component)

    def end(self, stage: str, *, error: str | None = None, note: str | None = None,
            at: float | None = None) -> None:
        span = self.spans.get(stage)
        if span is None:
            span = self.spans[stage] = Span(self._ms(at))
        span.end_ms = self._ms(at)
        if error:
            span.error = error
        if note:
            span.note = note

    def mark(self, stage: str, component: str | None = None, note: str | None = None, *,
             at: float | None = None) -> None:
        """An instant: start == end (end of speech, first token, first audio)."""
        if stage not in self.spans:
            t = self._ms(at)
            self.spans[stage] = Span(t, t, component, None, note)

    def tool_call(self, name: str, source: str, start_ms: float, outcome: str,
                  error: str | None = None, *, at: float | None = None) -> None:
        """Record one tool call that started at ``start_ms`` and ended ``at`` (now)."""
        self.tools.append({"name": name, "source": source, "start_ms": round(start_ms, 2),
                           "duration_ms": round(self._ms(at) - start_ms, 2),
                           "outcome": outcome, "error": error})

    def ms(self, stage: str) -> float | None:
        span = self.spans.get(stage)
        return None if span is None else span.end_ms

    def to_json(self) -> dict[str, Any]:
        """The trace as JSON; a guest's turn also carries ``"guest": true``."""
        data: dict[str, Any] = {
            "turn_id": self.turn_id, "user": self.user, "device": self.device,
            "started_at": self.started_at.isoformat(),
            "stages": {name: {"start_ms": round(s.start_ms, 2),
                              "end_ms": None if s.end_ms is None else round(s.end_ms, 2),
                              "component": s.component, "error": s.error, "note": s.note}
                       for name, s in self.spans.items()},
            "tools": list(self.tools)}
        if self.guest:
            data["guest"] = True
        if self.speaker is not None:
            data["speaker"] = self.speaker
        return data


class TraceLog:
    """Keeps the last ``kept`` traces in memory and appends every trace to a JSONL file."""

    def __init__(self, path: Path | None, kept: int = 200) -> None:
        self._path = path
        self._recent: deque[dict[str, Any]] = deque(maxlen=max(kept, 1))
        self._lock = threading.Lock()
        if path is not None:
            private_folder(path.parent)

    def record(self, trace: TurnTrace) -> dict[str, Any]:
        data = trace.to_json()
        line = json.dumps(data, ensure_ascii=False)
        with self._lock:
            self._recent.append(data)
            if self._path is not None:
                with open_private(self._path, "a") as f:  # transcripts: owner only
                    f.write(line + "\n")
        log.info("turn %s", line)
        return data

    def recent(self, user: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        with self._lock:
            items = [t for t in self._recent if user is None or t["user"] == user]
        return items[-limit:]
