"""The spectral view beside the voice vector (issue 28): an encoder with frames gives each
utterance's frame statistics; each enrolled member's Gaussian of their enrolment frames is
compared with the household's (everyone's frames together), and a member whose model
explains the voice worse than the household's loses score (``spectral_weight``). It only
ever takes a person away: a voice two members share in vector space goes to neither when
its spectrum is the other's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omoide.components.speaker import (
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
    identify,
    unit,
)
from omoide.components.voice_measures import (
    frame_statistics,
    pooled_statistics,
    spectral_scores,
)
from omoide.types import FloatArray
from omoide.voices import VoiceprintStore

QUALITY = VoiceQuality(3.0, 2.5, 0.0, -25.0)


def frames(centre: float, seed: int, n: int = 400) -> FloatArray:
    """Frames (n, 4) around ``centre`` in the first feature."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, 4)) * 0.5
    rows[:, 0] += centre
    return rows.astype(np.float32)


def stats(centre: float, seed: int) -> FloatArray:
    out = frame_statistics(frames(centre, seed))
    assert out is not None
    return out


SPECTRA = {"alice": {"clean": [stats(-2.0, 1), stats(-2.0, 2)]},
           "bob": {"clean": [stats(2.0, 3), stats(2.0, 4)]}}


def test_frame_statistics_are_count_mean_and_mean_square_and_pool_exactly() -> None:
    a, b = frames(0.0, 1, 100), frames(1.0, 2, 300)
    got = pooled_statistics([frame_statistics(a), frame_statistics(b)])  # type: ignore[list-item]
    assert got is not None
    both = np.vstack([a, b]).astype(np.float64)
    assert got[0] == 400
    assert np.allclose(got[1:5], both.mean(axis=0), atol=1e-5)
    assert np.allclose(got[5:], np.square(both).mean(axis=0), atol=1e-5)
    assert frame_statistics(np.zeros((0, 4), np.float32)) is None


def test_the_member_whose_frames_the_voice_resembles_fits_better_than_the_household() -> None:
    ratios = spectral_scores(stats(2.0, 9), SPECTRA)
    assert ratios["bob"] > 0 > ratios["alice"]


def test_a_voice_both_members_match_in_vector_space_is_nobody_when_its_spectrum_is_the_others(
) -> None:
    enrolled = {"alice": [unit(np.array([1.0, 0.1, 0], np.float32))],
                "bob": [unit(np.array([0.1, 1.0, 0], np.float32))]}
    heard = SpeakerEmbedding(unit(np.array([1.0, 0.12, 0], np.float32)), QUALITY, "test",
                             spectrum=stats(2.0, 9))   # sounds like alice, spectrum bob's
    plain = identify(heard, enrolled, 0.9, 0.05)
    assert plain.person == "alice"
    weighed = identify(heard, enrolled, 0.9, 0.05, spectra=SPECTRA, spectral_weight=0.05)
    assert (weighed.person, weighed.reason) == (None, SpeakerReason.NO_MATCH)
    assert weighed.scores["alice"] < plain.scores["alice"]
    assert weighed.scores["bob"] == pytest.approx(plain.scores["bob"])   # never raised


def test_without_statistics_for_everyone_the_vector_alone_decides() -> None:
    enrolled = {"alice": [unit(np.array([1.0, 0.1, 0], np.float32))],
                "bob": [unit(np.array([0.1, 1.0, 0], np.float32))]}
    heard = SpeakerEmbedding(unit(np.array([1.0, 0.12, 0], np.float32)), QUALITY, "test",
                             spectrum=stats(2.0, 9))
    partial = {"bob": SPECTRA["bob"]}
    assert identify(heard, enrolled, 0.9, 0.05, spectra=partial,
                    spectral_weight=0.05).person == "alice"


def test_spectra_are_kept_and_read_back_with_the_voiceprint(tmp_path: Path) -> None:
    store = VoiceprintStore(tmp_path)
    store.enrol("alice", "m", [unit(np.array([1.0, 0, 0], np.float32))], source="cli",
                spectra={"clean": [stats(-2.0, 1)], "white noise 20 dB": [stats(-1.0, 2)]})
    again = store.enrol("alice", "m", [unit(np.array([0.9, 0.1, 0], np.float32))],
                        source="cli", spectra={"clean": [stats(-2.0, 3)]})
    assert {k: len(v) for k, v in again.spectra.items()} == {"clean": 2,
                                                             "white noise 20 dB": 1}
    [read] = VoiceprintStore(tmp_path).voiceprints("alice")
    assert np.allclose(read.spectra["clean"][1], stats(-2.0, 3), rtol=1e-5, atol=1e-5)
    assert len(store.export("alice")["voiceprints"][0]["spectra"]["clean"]) == 2
