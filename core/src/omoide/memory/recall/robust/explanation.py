"""Why a read returned what it did: the notes a trace, ``/v1/turns`` and ``omoide eval
--misses`` show, gathered as the read goes and rendered once as a plain dict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from omoide.memory.recall.robust.query import PreparedQuery


@dataclass
class ReadExplanation:
    """What one robust read saw and decided; :meth:`as_details` is what callers see.

    Optional fields are left out of the details while unset, and the details keep the
    key order readers of traces are used to.
    """

    query: str
    recall_intent: bool
    intent: list[str]
    date_ranges: list[tuple[str, str, str]]
    gate: str | None = None
    """Which evidence let memories through, or why none were."""
    dense_source: Literal["store", "index"] | None = None
    """Where the dense scores came from: a store search, or the index's own vectors."""
    heard: list[str] | None = None
    """The person's words heard by sound in the query."""
    weekend_fallback: str | None = None
    """The later weekend 「週末」 was taken to mean (its first day, ISO)."""
    shared_words_ignored: str | None = None
    slot_asked: str | None = None
    """The slot (job, residence) the query asks about, when a memory fills it."""
    dense_margin: float | None = None
    dense_spread: float | None = None
    in_profile: int | None = None
    """Candidates left out because the profile block already carries them."""
    current_versions: dict[str, str] | None = None
    """Candidates a newer memory replaced, swapped for it (old id -> current id)."""
    earlier_versions: dict[str, str] | None = None
    """Asked about before: memories brought in by the candidate that replaced them
    (old id -> that candidate)."""
    matched: dict[str, list[str]] = field(default_factory=dict)
    """The words each returned memory shares with the query."""

    @classmethod
    def of(cls, q: PreparedQuery) -> ReadExplanation:
        """The explanation of a read of ``q``, before any channel ran."""
        return cls(q.text, q.intent.recall, list(q.intent.markers),
                   [(s.start.isoformat(), s.end.isoformat(), s.label) for s in q.spans])

    def as_details(self) -> dict[str, Any]:
        """The notes as a dict, only what was set."""
        details: dict[str, Any] = {"query": self.query, "recall_intent": self.recall_intent,
                                   "intent": self.intent, "date_ranges": self.date_ranges}
        if self.dense_source == "store":
            details["dense_source"] = self.dense_source
        optional_before_gate = {"heard": self.heard,
                                "weekend_fallback": self.weekend_fallback,
                                "shared_words_ignored": self.shared_words_ignored,
                                "slot_asked": self.slot_asked}
        details.update({k: v for k, v in optional_before_gate.items() if v is not None})
        if self.gate is not None:
            details["gate"] = self.gate
        if self.dense_source == "index":
            details["dense_source"] = self.dense_source
        optional_after_gate = {"dense_margin": self.dense_margin,
                               "dense_spread": self.dense_spread,
                               "in_profile": self.in_profile,
                               "current_versions": self.current_versions,
                               "earlier_versions": self.earlier_versions,
                               "matched": self.matched or None}
        details.update({k: v for k, v in optional_after_gate.items() if v is not None})
        return details
