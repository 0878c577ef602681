"""Value types shared by the core and plugins (frozen dataclasses).

Audio is always mono float32 in [-1, 1] with an explicit sample rate; components
that need another rate resample with :func:`omoide.audio.resample`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]


@dataclass(frozen=True, eq=False)
class AudioClip:
    """Mono PCM audio: float32 samples in [-1, 1] at ``sample_rate`` Hz."""

    samples: FloatArray
    sample_rate: int

    @property
    def duration_s(self) -> float:
        return len(self.samples) / float(self.sample_rate) if self.sample_rate else 0.0


@dataclass(frozen=True)
class Transcript:
    """What an ASR heard. ``text`` is NFKC-normalised by the core."""

    text: str
    language: str | None = None


class Emotion(enum.StrEnum):
    """Faces omoide can ask a device to show (the devices map these to what they have)."""

    NEUTRAL = "neutral"
    HAPPY = "happy"
    LAUGHING = "laughing"
    ANGRY = "angry"
    SAD = "sad"
    CRYING = "crying"
    SLEEPY = "sleepy"
    DOUBTFUL = "doubtful"
    SURPRISED = "surprised"
    LOVING = "loving"
    THINKING = "thinking"
    EMBARRASSED = "embarrassed"
    RELAXED = "relaxed"


Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ChatMessage:
    """One message of a chat request (OpenAI shape)."""

    role: Role
    content: str
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the chat model: a name, a description and a JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A call of a tool the chat model asked for; ``arguments`` is a JSON string."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatDelta:
    """One piece of a streamed chat reply: text, or a complete tool call."""

    text: str = ""
    tool_call: ToolCall | None = None


@dataclass(frozen=True)
class Exchange:
    """One user utterance and the assistant's reply, as journaled."""

    id: str
    user: str
    user_text: str
    assistant_text: str
    at: datetime
    session_id: str | None = None


@dataclass(frozen=True)
class Memory:
    """A fact about one user, distilled from exchanges.

    ``event_dates`` are absolute dates the fact is about (parsed from the text);
    ``created_at`` is when it was said; ``superseded_by`` names the newer memory
    that replaced it (kept for history, never injected over the new one).
    """

    id: str
    user: str
    text: str
    created_at: datetime
    event_dates: tuple[date, ...] = ()
    kind: str = "fact"
    entities: tuple[str, ...] = ()
    source_exchange_ids: tuple[str, ...] = ()
    superseded_by: str | None = None


@dataclass(frozen=True)
class RetrievedMemory:
    """A memory chosen for a prompt, with its fused score and per-channel evidence."""

    memory: Memory
    score: float
    channels: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorRecord:
    """A vector with its id and payload, as a vector store keeps it for one user."""

    id: str
    vector: FloatArray
    payload: dict[str, Any]


@dataclass(frozen=True)
class VectorHit:
    """A search result from a vector store: id, cosine similarity, payload."""

    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class EmbedderFingerprint:
    """Identity of an embedding space: model, dims and the vector of a probe sentence.

    Two embedders agree when model and dims are equal and their probe vectors have
    cosine >= a threshold; a store filled by one refuses the other.
    """

    model: str
    dims: int
    probe_text: str
    probe_vector: tuple[float, ...]

    def agreement(self, other: EmbedderFingerprint) -> float:
        """Cosine between the two probe vectors (0.0 when the dims differ)."""
        if self.dims != other.dims or len(self.probe_vector) != len(other.probe_vector):
            return 0.0
        a = np.asarray(self.probe_vector, dtype=np.float64)
        b = np.asarray(other.probe_vector, dtype=np.float64)
        denom = float(np.linalg.norm(a) * np.linalg.norm(b)) or 1.0
        return float(a @ b) / denom

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "dims": self.dims, "probe_text": self.probe_text,
                "probe_vector": list(self.probe_vector)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EmbedderFingerprint:
        return cls(model=str(data["model"]), dims=int(data["dims"]),
                   probe_text=str(data["probe_text"]),
                   probe_vector=tuple(float(x) for x in data["probe_vector"]))


class Priority(enum.IntEnum):
    """Who waits for a blocking model call: a person (interactive) or nobody (batch)."""

    INTERACTIVE = 0
    BATCH = 1


EmbedPurpose = Literal["query", "document"]
