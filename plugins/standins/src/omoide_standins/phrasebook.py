"""The ``phrasebook`` ASR, a test double: recognises only the sentences of its phrase book.

omoide's offline recogniser is Whisper (``asr: whisper``). This double remains for tests
that need a deterministic recogniser listening to real audio: the same sentence always
gives the same transcript, on any CPU, in milliseconds. At start it speaks every phrase with
OpenJTalk (``pyopenjtalk``), computes MFCC templates, and for each utterance returns the
phrase whose template is nearest by dynamic time warping — when it is near enough
(``max_distance``) and clearly nearer than the runner-up (``max_ratio``); otherwise it
returns ``no_match_text`` (empty by default, which the pipeline treats as "heard nothing").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field

from omoide.api import (
    ASR,
    ASRConfig,
    AudioClip,
    ConfigError,
    ConfigProblem,
    FloatArray,
    ModelNotAvailable,
    Priority,
    RecognitionContext,
    Transcript,
)

log = logging.getLogger("omoide.asr.phrasebook")


class PhrasebookConfig(ASRConfig):
    phrases: list[str] = Field(default_factory=list,
                               description="The sentences it can recognise, as they should be"
                               " transcribed.")
    phrases_file: str | None = Field(None, description="A UTF-8 text file with more phrases,"
                                     " one per line (blank lines and lines starting with #"
                                     " are ignored).")
    max_distance: float = Field(0.3, gt=0, le=2,
                                description="Largest normalised DTW distance accepted as a"
                                " match (0 = identical; unrelated speech sits near 0.35+).")
    max_ratio: float = Field(0.8, gt=0, le=1,
                             description="Best distance must be at most this fraction of the"
                             " runner-up phrase's, so near-ties are refused.")
    template_speeds: list[float] = Field(default_factory=lambda: [1.0], min_length=1,
                                         description="Speaking speeds at which each phrase is"
                                         " synthesised as a template (more = slower start).")
    shortlist: int = Field(4, ge=1, le=1000,
                           description="Phrases compared at full resolution after a coarse"
                           " first pass over all of them (keeps large phrase books fast).")
    no_match_text: str = Field("", description="Transcript returned when no phrase matches.")


@dataclass(frozen=True)
class Match:
    """The outcome for one utterance: best phrase, its distance, the runner-up's."""

    phrase: str | None
    distance: float
    runner_up: float


class PhrasebookASR(ASR):
    """Template-matching recogniser for a fixed list of Japanese phrases (a test double)."""

    name = "phrasebook"
    Config = PhrasebookConfig
    config: PhrasebookConfig
    stand_in = ("a test double, not for real use: it recognises only the sentences of its"
                " phrase book, by comparing the audio with OpenJTalk renditions of them, and"
                " returns an empty transcript for anything else; the offline recogniser is"
                " asr.use: whisper, the production one asr.use: qwen")

    def __init__(self, config: PhrasebookConfig) -> None:
        super().__init__(config)
        self._phrases: list[str] = []
        self._templates: list[tuple[int, FloatArray]] = []
        self._sketches: list[FloatArray] = []

    @property
    def phrases(self) -> list[str]:
        """The phrases it can recognise (after :meth:`start`)."""
        return list(self._phrases)

    def _collect_phrases(self) -> list[str]:
        cfg = self.config
        phrases = [p.strip() for p in cfg.phrases]
        if cfg.phrases_file:
            path = Path(cfg.phrases_file).expanduser()
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise ConfigError([ConfigProblem("asr.phrases_file",
                                                 f"cannot read {path}: {exc}")]) from exc
            phrases += [ln.strip() for ln in lines if not ln.strip().startswith("#")]
        unique = list(dict.fromkeys(p for p in phrases if p))
        if not unique:
            raise ConfigError([ConfigProblem(
                "asr.phrases", "the phrase book is empty: list the sentences to recognise"
                " in asr.phrases or asr.phrases_file")])
        return unique

    async def _start(self) -> None:
        phrases = self._collect_phrases()
        try:
            import pyopenjtalk  # noqa: F401  (checked here so the failure names the package)
        except ImportError as exc:
            raise ModelNotAvailable("asr phrasebook needs pyopenjtalk to build its templates",
                                    hint="pip install pyopenjtalk-plus") from exc
        cfg = self.config
        self._templates = await self.run_blocking(
            lambda: _build_templates(phrases, cfg.template_speeds, self.input_sample_rate),
            Priority.BATCH)
        from omoide_standins.acoustic import coarsen
        self._sketches = [coarsen(t) for _, t in self._templates]
        self._phrases = phrases
        log.info("phrasebook ready: %d phrases, %d templates", len(phrases),
                 len(self._templates))

    async def _stop(self) -> None:
        self._templates = []
        self._sketches = []

    async def _transcribe(self, audio: AudioClip, context: RecognitionContext) -> Transcript:
        # A fixed phrase book cannot be biased: the context is ignored.
        match = await self.run_blocking(lambda: self.match(audio.samples), Priority.INTERACTIVE)
        cfg = self.config
        text = match.phrase if match.phrase is not None else cfg.no_match_text
        return Transcript(text, cfg.language)

    def match(self, samples: FloatArray) -> Match:
        """Compare 16 kHz ``samples`` with every phrase (blocking; call via the worker)."""
        from omoide_standins.acoustic import coarsen, dtw_distance, is_silent, mfcc_features

        cfg = self.config
        if is_silent(samples):
            return Match(None, float("inf"), float("inf"))
        feats = mfcc_features(samples)
        candidates = set(range(len(self._phrases)))
        if len(self._phrases) > cfg.shortlist:
            # A first pass on 3x coarser frames (~1/9 of the work) picks the shortlist.
            sketch = coarsen(feats)
            rough = np.full(len(self._phrases), np.inf)
            for (index, _), template_sketch in zip(self._templates, self._sketches,
                                                  strict=True):
                rough[index] = min(rough[index], dtw_distance(sketch, template_sketch))
            candidates = {int(i) for i in np.argsort(rough)[:cfg.shortlist]}
        best = np.full(len(self._phrases), np.inf)
        for index, template in self._templates:
            if index in candidates:
                best[index] = min(best[index], dtw_distance(feats, template))
        order = np.argsort(best)
        first = float(best[order[0]])
        second = float(best[order[1]]) if len(order) > 1 else float("inf")
        accepted = first <= cfg.max_distance and (second == float("inf")
                                                  or first <= cfg.max_ratio * second)
        log.debug("phrasebook: best %r %.3f, runner-up %.3f, %s", self._phrases[order[0]],
                  first, second, "accepted" if accepted else "refused")
        return Match(self._phrases[order[0]] if accepted else None, first, second)


def _build_templates(phrases: list[str], speeds: list[float],
                     rate: int) -> list[tuple[int, FloatArray]]:
    """Synthesise every phrase at every speed and keep its features, tagged by phrase."""
    from omoide_standins.acoustic import mfcc_features
    from omoide_standins.speech import synthesize

    templates: list[tuple[int, FloatArray]] = []
    for index, phrase in enumerate(phrases):
        for speed in speeds:
            templates.append((index, mfcc_features(synthesize(phrase, rate, speed=speed))))
    return templates
