"""Mixed voices judged by halves (``mixed_check: halves``): an utterance whose windows
disagree is refused only when its first and second half sound like different enrolled
members. One voice whose windows vary (noise, different sounds) is still identified; two
voices in turn are mixed voices, whatever their score."""

from __future__ import annotations

import numpy as np

from omoide.components.speaker import (
    SpeakerEmbedding,
    SpeakerReason,
    VoiceQuality,
    identify,
    unit,
)


def v(*values: float) -> np.ndarray:
    return unit(np.asarray(values, np.float32))


ENROLLED = {"alice": [v(1, 0, 0)], "bob": [v(0, 1, 0)]}


def heard(first: np.ndarray, second: np.ndarray, consistency: float) -> SpeakerEmbedding:
    quality = VoiceQuality(3.0, 2.5, 0.0, -25.0, consistency)
    return SpeakerEmbedding(unit(first + second), quality, "test", None, (first, second))


def test_one_voice_whose_windows_vary_is_identified_when_both_halves_are_closest_to_it(
) -> None:
    varying = heard(v(1, 0.3, 0.2), v(1, 0.1, -0.2), consistency=0.6)
    who = identify(varying, ENROLLED, 0.8, 0.05, min_consistency=0.68)
    assert (who.person, who.reason) == ("alice", SpeakerReason.MATCHED)


def test_two_voices_in_turn_are_mixed_even_when_the_whole_scores_high() -> None:
    in_turn = heard(v(1, 0, 0), v(0.45, 1, 0), consistency=0.4)
    assert identify(in_turn, ENROLLED, 0.0, 0.0).person == "alice"   # without the check
    who = identify(in_turn, ENROLLED, 0.0, 0.0, min_consistency=0.68)
    assert (who.person, who.reason) == (None, SpeakerReason.MIXED_VOICES)


def test_windows_that_agree_are_not_checked_by_halves() -> None:
    agreeing = heard(v(1, 0.1, 0), v(0.7, 0.7, 0), consistency=0.9)
    who = identify(agreeing, ENROLLED, 0.0, 0.0, min_consistency=0.68)
    assert who.reason is SpeakerReason.MATCHED


def test_disagreeing_windows_without_halves_are_mixed() -> None:
    quality = VoiceQuality(3.0, 2.5, 0.0, -25.0, 0.5)
    single = SpeakerEmbedding(v(1, 0, 0), quality, "test")
    who = identify(single, ENROLLED, 0.0, 0.0, min_consistency=0.68)
    assert who.reason is SpeakerReason.MIXED_VOICES
