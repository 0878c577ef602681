"""The household shapes the decision (issue 28, toward the identification target): a
member far from every other enrolled member is accepted at a lower score than one with
a close-sounding housemate, and a projection fitted on the members' own enrolment
vectors removes the directions in which one voice varies (noise, level) before scoring.
Both are chosen from enrolment data only, never from the voice being identified."""

from __future__ import annotations

import numpy as np
import pytest

from omoide.components.speaker import (
    HouseholdRules,
    SpeakerConfig,
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
    household_thresholds,
    identify,
    nuisance_projection,
    unit,
)

GOOD = VoiceQuality(duration_s=3.0, voiced_s=2.5, clipped_fraction=0.0, level_dbfs=-25.0)


def heard(*values: float) -> SpeakerEmbedding:
    return SpeakerEmbedding(unit(np.asarray(values, np.float32)), GOOD, "test")


def v(*values: float) -> np.ndarray:
    return unit(np.asarray(values, np.float32))


def test_a_member_far_from_the_others_gets_a_lower_threshold_never_under_the_floor() -> None:
    centroids = {"alice": v(1, 0, 0), "bob": v(0, 1, 0), "carol": v(0, 1, 0.3)}
    got = household_thresholds(centroids, 0.9, gap=0.1, floor=0.8)
    assert got["alice"] == pytest.approx(0.8)            # nearest 0.0 + 0.1, floored
    assert got["bob"] == pytest.approx(0.9)              # carol sounds alike: capped
    assert household_thresholds(centroids, 0.9, None, 0.8) == dict.fromkeys(centroids, 0.9)
    assert household_thresholds({"alice": v(1, 0, 0)}, 0.9, 0.1, 0.8) == {"alice": 0.9}


def test_a_voice_under_the_threshold_is_named_only_when_no_housemate_sounds_close() -> None:
    far = {"alice": [v(1, 0, 0)], "bob": [v(0, 1, 0)]}
    near = {"alice": [v(1, 0, 0)], "bob": [v(0.85, -0.53, 0)]}
    voice = heard(1, 0.55, 0)                             # cosine 0.876 to alice
    rules = HouseholdRules(gap=0.1, floor=0.85)
    assert identify(voice, far, 0.9, 0.0).reason is SpeakerReason.NO_MATCH
    assert identify(voice, far, 0.9, 0.0, household=rules).person == "alice"
    close_call = identify(voice, near, 0.9, 0.0, household=rules)
    assert close_call.person is None                      # bob is 0.85 from alice: 0.9
    assert set(close_call.scores) == {"alice", "bob"}


def test_the_projection_removes_the_direction_each_voice_varies_in() -> None:
    # alice's and bob's enrolment utterances differ along axis 2 (say, noise) only
    people = {"alice": [[v(1, 0, 0.5), v(1, 0, -0.5)]], "bob": [[v(0, 1, 0.5), v(0, 1, -0.5)]]}
    matrix = nuisance_projection(people, 1)
    assert matrix is not None
    assert np.allclose(matrix @ np.array([0, 0, 1.0]), 0, atol=1e-6)
    assert np.allclose(matrix @ np.array([1.0, 0, 0]), [1, 0, 0], atol=1e-6)
    assert nuisance_projection(people, 0) is None
    assert nuisance_projection({"alice": [[v(1, 0, 0)]]}, 1) is None   # nothing varies


def test_a_voice_heard_along_the_nuisance_direction_matches_once_it_is_projected_out(
        ) -> None:
    enrolled = {"alice": [v(1, 0, 0.3), v(1, 0, -0.3)], "bob": [v(0, 1, 0.3), v(0, 1, -0.3)]}
    voice = heard(1, 0.1, 1.2)                            # alice, far along the nuisance axis
    plain = identify(voice, enrolled, 0.9, 0.05)
    assert plain.person is None and plain.reason is SpeakerReason.NO_MATCH
    projected = identify(voice, enrolled, 0.9, 0.05, household=HouseholdRules(projection=1))
    assert projected.person == "alice" and projected.score > 0.99


def test_bad_vectors_are_refused_before_any_projection() -> None:
    from omoide.errors import InvalidInput

    with pytest.raises(InvalidInput):
        identify(heard(1, 0, 0), {"alice": [np.ones(4, np.float32)]}, 0.9, 0.0,
                 household=HouseholdRules(projection=1))


def test_the_household_rules_are_off_unless_configured() -> None:
    config = SpeakerConfig()
    assert (config.household_projection, config.household_gap) == (0, None)
