"""What ``omoide bench asr`` and ``omoide bench tts`` share: the Japanese phrase set,
components built from YAML-like specs, and synthesised utterances.

The phrase set (``data/asr_phrases_ja.jsonl``) has 120 sentences a person might say to
the robot — statements, questions, names, places, dates, numbers — each with the
entities (names, places, things) it contains, as they should be spelled.
"""

from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omoide.types import AudioClip

PAD_S = 0.3
"""Silence around each utterance, as the server's VAD leaves it (pre-roll, hang-over)."""


@dataclass(frozen=True)
class Phrase:
    text: str
    kind: str
    entities: tuple[str, ...]


def load_phrases(limit: int | None = None) -> list[Phrase]:
    """The bundled phrase set (the first ``limit`` phrases when given)."""
    data = importlib.resources.files("omoide_bench.benches") / "data" / "asr_phrases_ja.jsonl"
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    phrases = [Phrase(r["text"], r["kind"], tuple(r.get("entities", ()))) for r in rows]
    return phrases[:limit] if limit else phrases


def parse_overrides(text: str) -> dict[str, Any]:
    """``"beam_size=5,threads=1"`` -> ``{"beam_size": 5, "threads": 1}`` (YAML values)."""
    import yaml

    out: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"not KEY=VALUE: {item!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


def label(overrides: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in overrides.items()) or "(config)"


def build_component(kind: str, spec: dict[str, Any]) -> Any:
    """A component of ``kind`` from a stage spec ``{"use": name, **options}`` (not started).

    Loads only the plugin that provides it; exits with a readable message when none does.
    """
    from omoide.plugins import build_registry

    options = dict(spec)
    use = options.pop("use", None)
    if not use:
        raise SystemExit(f"the {kind} stage names no component (use:)")
    registry = build_registry([(kind, use)])
    cls = registry.components[kind].get(use)
    if cls is None:
        raise SystemExit(f"no {kind} component named {use!r} is installed"
                         f" (installed: {', '.join(registry.available(kind)) or 'none'})")
    return cls(cls.Config.model_validate(options))


def config_stage(path: str | None, stage: str) -> dict[str, Any]:
    """The raw ``stage`` section of the YAML config at ``path`` (default: offline.yaml)."""
    import yaml

    from omoide.commands.demo import default_config

    source = Path(path) if path else default_config()
    data = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    section = data.get(stage)
    if isinstance(section, str):
        return {"use": section}
    if not isinstance(section, dict):
        raise SystemExit(f"{source} has no {stage} section")
    return dict(section)


def voice_spec(text: str) -> dict[str, Any]:
    """``"kokoro:jm_kumo"`` -> ``{"use": "kokoro", "voice": "jm_kumo"}``."""
    use, _, voice = text.partition(":")
    return {"use": use, "voice": voice} if voice else {"use": use}


def voice_label(spec: dict[str, Any]) -> str:
    return f"{spec['use']}:{spec['voice']}" if spec.get("voice") else str(spec["use"])


async def synthesise(tts: Any, text: str, rate: int = 16000) -> AudioClip:
    """``text`` spoken by ``tts``, at ``rate``, with :data:`PAD_S` of silence around it."""
    from omoide.audio import resample

    clip = resample(await tts.synthesize(text), rate)
    pad = np.zeros(int(PAD_S * rate), dtype=np.float32)
    return AudioClip(np.concatenate([pad, clip.samples, pad]), rate)
