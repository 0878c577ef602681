"""Per-person thresholds from enrolment: a person whose enrolment utterances agree closely
must be matched closely (issue 28's better figures). Chosen from enrolment data only."""

from __future__ import annotations

import numpy as np
import pytest

from omoide.components.speaker import (
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
    identify,
    leave_one_out_scores,
    person_threshold,
)

GOOD = VoiceQuality(duration_s=3.0, voiced_s=2.5, clipped_fraction=0.0, level_dbfs=-25.0)


def voiceprint(*values: float) -> SpeakerEmbedding:
    vector = np.asarray(values, dtype=np.float32)
    return SpeakerEmbedding(vector / np.linalg.norm(vector), GOOD, "test")


def test_each_enrolment_utterance_is_scored_against_the_others() -> None:
    vectors = [np.array([1, 0], np.float32), np.array([0, 1], np.float32),
               np.array([1, 1], np.float32)]
    scores = leave_one_out_scores(vectors)
    assert scores[2] == pytest.approx(1.0)          # [1,1] is the mean of the other two
    assert scores[0] == pytest.approx(np.cos(3 * np.pi / 8), abs=1e-6)  # 67.5 degrees away
    assert leave_one_out_scores(vectors[:1]) == ()


def test_a_persons_threshold_is_their_own_scores_less_the_spread_never_below_the_floor(
        ) -> None:
    tight = (0.95, 0.96, 0.97)
    assert person_threshold(tight, 0.8, 1.0) == pytest.approx(0.96 - 0.02)  # sd floor 0.02
    assert person_threshold(tight, 0.8, None) == 0.8
    assert person_threshold((0.7, 0.75, 0.8), 0.8, 1.0) == 0.8
    assert person_threshold((0.99,), 0.8, 1.0) == 0.8   # one utterance: no spread to read


def test_a_score_over_the_floor_but_under_the_persons_threshold_is_no_match() -> None:
    enrolled = {"alice": [np.array([1, 0, 0], np.float32)],
                "bob": [np.array([0, 1, 0], np.float32)]}
    heard = voiceprint(1, 0.4, 0)                     # cosine 0.93 to alice
    assert identify(heard, enrolled, 0.8, 0.0).person == "alice"
    who = identify(heard, enrolled, 0.8, 0.0, thresholds={"alice": 0.95})
    assert who.person is None and who.reason is SpeakerReason.NO_MATCH
    assert who.score == pytest.approx(0.928, abs=1e-3)
