"""Each person's voiceprints, kept privately in the data dir.

A voiceprint is biometric data: it belongs to its person. They are kept in
``<data_dir>/voices/<person>.json`` (the folder 0700, each file 0600, written whole to a
temporary file and renamed into place), one entry per encoder (``model_id``: vectors of
two encoders are not comparable), with the enrolment vectors themselves (unit vectors, one
per enrolment utterance), the same utterances' vectors with noise added (one group per
condition, ``"noise 20 dB"``: what a voice heard in noise is compared with), when and
how they were enrolled, and the scores the person's own enrolment utterances got against
their voiceprint (what a per-person threshold is chosen from), and, for an encoder with
a frames view, each utterance's frame statistics by condition (``"clean"`` and the noise
conditions: counts, means and mean squares of spectral features, from which a spectral
model of the person is made). No audio is kept.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from omoide.components.speaker import leave_one_out_scores
from omoide.errors import InvalidInput
from omoide.types import FloatArray
from omoide.user_ids import validate_user_id

log = logging.getLogger("omoide.voices")

FOLDER = "voices"
MAX_VECTORS = 64
"""Enrolment utterances kept per person and encoder (the newest)."""


@dataclass(frozen=True)
class Voiceprint:
    """One person's enrolment in one encoder's space."""

    person: str
    model_id: str
    vectors: tuple[FloatArray, ...]
    enrolled_at: datetime
    source: str
    """How it was enrolled: ``cli``, ``console``, ``voice`` or ``api``."""
    self_scores: tuple[float, ...] = ()
    """Each enrolment utterance's cosine to the mean of the others (leave-one-out)."""
    conditions: Mapping[str, tuple[FloatArray, ...]] = field(default_factory=dict)
    """The enrolment utterances embedded again with noise added, by condition
    (``"noise 20 dB"``): a voice heard in noise is compared with these too."""
    spectra: Mapping[str, tuple[FloatArray, ...]] = field(default_factory=dict)
    pitches: tuple[float, ...] = ()
    """The median pitch (Hz) of each enrolment utterance that had one."""
    """Each enrolment utterance's frame statistics, by condition (``"clean"`` and the
    noise conditions; empty for an encoder without a frames view, or enrolled before)."""

    def to_json(self, *, vectors: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "person": self.person, "model_id": self.model_id,
            "utterances": len(self.vectors), "enrolled_at": self.enrolled_at.isoformat(),
            "source": self.source, "self_scores": [round(s, 4) for s in self.self_scores],
            "conditions": sorted(self.conditions)}
        if vectors:
            data["vectors"] = _rounded(self.vectors)
            data["condition_vectors"] = {name: _rounded(rows)
                                         for name, rows in self.conditions.items()}
            data["spectra"] = {name: _rounded(rows) for name, rows in self.spectra.items()}
            data["pitches"] = [round(p, 2) for p in self.pitches]
        return data

    @classmethod
    def from_json(cls, person: str, data: dict[str, Any]) -> Voiceprint:
        vectors = tuple(np.asarray(v, dtype=np.float32) for v in data["vectors"])
        conditions = {str(name): tuple(np.asarray(v, dtype=np.float32) for v in rows)
                      for name, rows in (data.get("condition_vectors") or {}).items()}
        return cls(person, str(data["model_id"]), vectors,
                   datetime.fromisoformat(str(data["enrolled_at"])), str(data["source"]),
                   tuple(float(s) for s in data.get("self_scores", ())), conditions,
                   _groups(data.get("spectra")),
                   tuple(float(p) for p in data.get("pitches") or ()))


def _groups(data: Any) -> dict[str, tuple[FloatArray, ...]]:
    return {str(name): tuple(np.asarray(v, dtype=np.float32) for v in rows)
            for name, rows in (data or {}).items()}


def _merged(before: Mapping[str, Sequence[FloatArray]],
            added: Mapping[str, Sequence[FloatArray]]) -> dict[str, tuple[FloatArray, ...]]:
    """Each group's rows, the ``added`` after the ``before`` (the newest MAX_VECTORS)."""
    groups = {name: tuple((list(before.get(name, ())) + list(added.get(name, ())))
                          [-MAX_VECTORS:]) for name in {*before, *added}}
    return {name: rows for name, rows in groups.items() if rows}


def _rounded(rows: Sequence[FloatArray]) -> list[list[float]]:
    return [[round(float(x), 6) for x in v] for v in rows]


def _checked_vectors(rows: Sequence[FloatArray]) -> list[FloatArray]:
    out = [np.asarray(v, dtype=np.float32) for v in rows]
    if any(v.ndim != 1 or not np.isfinite(v).all() for v in out):
        raise InvalidInput("voiceprint vectors must be finite 1-d vectors")
    return out


class VoiceprintStore:
    """The voiceprints of everyone, one private file per person under ``root``.

    Reads are cached per file and refreshed when the file changes (another process, the
    CLI, may enrol or erase while the server runs). Thread-safe."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir) / FOLDER
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, list[Voiceprint]]] = {}

    def _path(self, person: str) -> Path:
        return self.root / f"{validate_user_id(person)}.json"

    def enrol(self, person: str, model_id: str, vectors: Sequence[FloatArray], *,
              source: str, replace: bool = False,
              conditions: Mapping[str, Sequence[FloatArray]] | None = None,
              spectra: Mapping[str, Sequence[FloatArray]] | None = None,
              pitches: Sequence[float] = ()) -> Voiceprint:
        """Add ``vectors`` (one per utterance) to ``person``'s voiceprint in ``model_id``
        (``replace``: instead of what was enrolled), ``conditions``' vectors (the
        utterances in noise, by condition) to theirs, ``spectra`` (frame statistics
        by condition) and ``pitches`` (each utterance's median pitch) to theirs. Returns
        the voiceprint as stored."""
        if not vectors:
            raise InvalidInput("enrolment needs at least one usable utterance")
        new = _checked_vectors(vectors)
        added = {name: _checked_vectors(rows) for name, rows in (conditions or {}).items()}
        new_spectra = {name: _checked_vectors(rows) for name, rows in (spectra or {}).items()}

        def enrolled(stored: list[Voiceprint]) -> list[Voiceprint]:
            prints = {p.model_id: p for p in stored}
            old = prints.get(model_id)
            kept = [] if replace or old is None else list(old.vectors)
            if any(len(v) != len(new[0]) for v in [*kept, *new,
                                                   *itertools.chain(*added.values())]):
                raise InvalidInput(f"{person}'s voiceprint in {model_id}: vectors of "
                                   f"different lengths (expected {len(new[0])})")
            joined = (kept + new)[-MAX_VECTORS:]
            before = {} if replace or old is None else old.conditions
            groups = {name: tuple((list(before.get(name, ())) + added.get(name, []))
                                  [-MAX_VECTORS:])
                      for name in {*before, *added}}
            prints[model_id] = Voiceprint(person, model_id, tuple(joined), datetime.now(UTC),
                                          source, leave_one_out_scores(joined),
                                          {k: v for k, v in groups.items() if v},
                                          _merged({} if replace or old is None
                                                  else old.spectra, new_spectra),
                                          tuple(([] if replace or old is None
                                                 else list(old.pitches))
                                                + [float(p) for p in pitches])[-MAX_VECTORS:])
            return list(prints.values())

        return next(p for p in self._change(person, enrolled) if p.model_id == model_id)

    def _change(self, person: str,
                change: Callable[[list[Voiceprint]], list[Voiceprint]]) -> list[Voiceprint]:
        """Replace ``person``'s voiceprints by ``change`` of them, nobody else changing
        them meanwhile; returns what was stored."""
        with self._lock:
            prints = change(list(self._read(person)))
            self._write(person, prints)
            return prints

    def voiceprints(self, person: str) -> list[Voiceprint]:
        """``person``'s voiceprints (every encoder), empty when none."""
        with self._lock:
            return list(self._read(person))

    def enrolled(self, people: Iterable[str], model_id: str) -> dict[str, Voiceprint]:
        """Of ``people``, those with a voiceprint in ``model_id``."""
        found: dict[str, Voiceprint] = {}
        with self._lock:
            for person in people:
                for p in self._read(person):
                    if p.model_id == model_id:
                        found[person] = p
        return found

    def people(self) -> list[str]:
        """Everyone with a voiceprint, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json") if not p.name.startswith("."))

    def export(self, person: str) -> dict[str, Any]:
        """All of ``person``'s voiceprints as JSON (vectors included)."""
        return {"person": person,
                "voiceprints": [p.to_json() for p in self.voiceprints(person)]}

    def erase(self, person: str) -> int:
        """Remove ``person``'s voiceprints; returns how many there were."""
        with self._lock:
            count = len(self._read(person))
            self._path(person).unlink(missing_ok=True)
            self._cache.pop(person, None)
        if count:
            log.info("voiceprints of %s erased", person)
        return count

    # -- files ------------------------------------------------------------------------
    def _read(self, person: str) -> list[Voiceprint]:
        path = self._path(person)
        try:
            stamp = path.stat().st_mtime_ns
        except FileNotFoundError:
            self._cache.pop(person, None)
            return []
        cached = self._cache.get(person)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            prints = [Voiceprint.from_json(person, d) for d in data.get("voiceprints", [])]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("voiceprints of %s unreadable (%s); treated as none", person, exc)
            prints = []
        self._cache[person] = (stamp, prints)
        return prints

    def _write(self, person: str, prints: list[Voiceprint]) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        path = self._path(person)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"person": person, "voiceprints": [p.to_json() for p in prints]}, f)
        os.replace(tmp, path)
        self._cache.pop(person, None)
