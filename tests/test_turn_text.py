"""The turn stage reads what was heard: a Japanese utterance that ends complete ends the
turn soon, one that ends open (a particle, a conjunctive form, a filler) waits."""

from __future__ import annotations

import pytest

from omoide.components.turn import TurnConfig, TurnDetector, sentence_end
from omoide.types import FloatArray


@pytest.mark.parametrize("text", [
    "友達と箱根に行くんだ", "昨日映画を見た。", "ラーメンが好きです", "そうなんですね",
    "週末の予定覚えてる?", "週末の予定覚えてる？", "行ってきました", "いいよ", "好きなの",
    "元気ですか？",
    "早く寝ろ"])
def test_a_predicate_or_a_sentence_final_particle_ends_complete(text: str) -> None:
    assert sentence_end(text) == "complete"


@pytest.mark.parametrize("text", [
    "来週の土曜日に", "明日は", "雨だけど", "疲れたから", "寒いし",
    "友達と", "静かで", "えーと", "最近、", "コーヒーを飲み"])
def test_a_particle_a_conjunctive_form_a_filler_or_a_comma_ends_open(text: str) -> None:
    assert sentence_end(text) == "open"


@pytest.mark.parametrize("text", [
    "明日の天気を教えて", "ちょっと待って", "急いで", "忘れないで", "ケーキを食べて",
    "本を読んでて", "写真を見せてくれて"])
def test_a_predicates_te_form_at_the_end_is_a_request_or_a_sentence_going_on(
        text: str) -> None:
    """「教えて」 is a whole request, 「食べて、」 a sentence going on: the words alone
    cannot tell, so they are read apart from both."""
    assert sentence_end(text) == "request"


@pytest.mark.parametrize("text", ["食べてから", "教えてください", "静かで", "雨で"])
def test_a_te_form_followed_by_more_words_or_a_copula_is_no_request(text: str) -> None:
    assert sentence_end(text) != "request"


@pytest.mark.parametrize("text", ["東京", "今何時", "何", "hello", "", "。", "？",
                                  "箱根にはどうやって?", "パン、ご飯、何に?"])
def test_a_noun_english_nothing_or_a_fragment_with_a_question_mark_tells_nothing(
        text: str) -> None:
    """Whisper puts 「？」 after fragments too: the mark counts only with the words."""
    assert sentence_end(text) is None


@pytest.mark.parametrize("text", ["今何時、", "駅どこ、", "今日何曜日、", "それ誰、"])
def test_a_comma_after_a_question_word_tells_nothing(text: str) -> None:
    """Whisper ends short questions with 「、」 too (「今何時？」 heard as 「今何時、」 waited
    the open ceiling); a question word ending the words is no sign either way (今何時か
    教えてくれる？ pauses after 今何時 too), so the voice decides."""
    assert sentence_end(text) is None


@pytest.mark.parametrize("text", ["何時に、", "何か、", "何、", "昨日、", "東京、"])
def test_a_comma_after_a_particle_another_noun_or_a_bare_what_still_ends_open(
        text: str) -> None:
    assert sentence_end(text) == "open"


class Fixed(TurnDetector):
    """A detector whose judgement is given (only the wait is under test)."""

    name = "fixed"

    def _finished_probability(self, audio: FloatArray) -> float:
        return 0.5


def test_without_the_text_setting_the_text_changes_nothing() -> None:
    detector = Fixed(TurnConfig(max_silence_ms=1200))
    assert detector.silence_to_wait_ms(0.2, "行くんだ") == 1200
    assert detector.silence_to_wait_ms(0.9, "土曜日に") == 0
    assert not detector.reads_text


def test_a_complete_sentence_ends_soon_even_when_the_audio_sounds_unfinished() -> None:
    detector = Fixed(TurnConfig(max_silence_ms=1200, text_complete_silence_ms=400))
    assert detector.reads_text
    assert detector.silence_to_wait_ms(0.2, "友達と箱根に行くんだ") == 400
    assert detector.silence_to_wait_ms(0.9, "友達と箱根に行くんだ") == 0


def test_a_voice_surely_mid_sentence_is_not_overruled_by_the_words() -> None:
    detector = Fixed(TurnConfig(max_silence_ms=1200, text_complete_silence_ms=0,
                                text_min_probability=0.05))
    assert detector.silence_to_wait_ms(0.01, "友達と箱根に行くんだ") == 1200
    assert detector.silence_to_wait_ms(0.06, "友達と箱根に行くんだ") == 0


def test_a_pause_after_a_particle_waits_even_when_the_audio_sounds_finished() -> None:
    detector = Fixed(TurnConfig(max_silence_ms=1200, text_complete_silence_ms=400,
                                text_open_silence_ms=1000))
    assert detector.silence_to_wait_ms(0.9, "来週の土曜日に") == 1000
    assert detector.silence_to_wait_ms(0.2, "来週の土曜日に") == 1200
    capped = Fixed(TurnConfig(max_silence_ms=800, text_complete_silence_ms=400,
                              text_open_silence_ms=1000))
    assert capped.silence_to_wait_ms(0.9, "来週の土曜日に") == 800   # never past the ceiling


def test_text_that_tells_nothing_or_a_failed_judgement_leaves_the_rule_as_it_was() -> None:
    detector = Fixed(TurnConfig(max_silence_ms=1200, fallback_silence_ms=700,
                                text_complete_silence_ms=400))
    assert detector.silence_to_wait_ms(0.2, "東京") == 1200
    assert detector.silence_to_wait_ms(0.2, None) == 1200
    assert detector.silence_to_wait_ms(None, "行くんだ") == 700


def test_a_request_ends_as_a_complete_sentence_when_the_voice_sounds_somewhat_finished(
        ) -> None:
    detector = Fixed(TurnConfig(max_silence_ms=1200, text_complete_silence_ms=0,
                                text_min_probability=0.01, text_open_silence_ms=1200,
                                text_request_probability=0.2))
    assert detector.silence_to_wait_ms(0.3, "明日の天気を教えて") == 0
    assert detector.silence_to_wait_ms(0.1, "明日の天気を教えて") == 1200  # going on


def test_without_the_request_setting_a_te_form_waits_as_an_open_sentence() -> None:
    detector = Fixed(TurnConfig(max_silence_ms=1200, text_complete_silence_ms=0,
                                text_open_silence_ms=1000))
    assert detector.silence_to_wait_ms(0.9, "明日の天気を教えて") == 1000
    assert detector.silence_to_wait_ms(0.9, "来週の土曜日に") == 1000


@pytest.mark.parametrize("text", ["最近よく眠れなくて", "早く行きたくて", "手伝ってくれなくて"])
def test_a_te_after_a_negative_or_a_wish_is_a_reason_going_on_never_a_request(
        text: str) -> None:
    """「眠れなくて」 (an auxiliary's く-form) explains; a request not to is 「〜ないで」."""
    assert sentence_end(text) == "open"


def test_with_a_request_wait_a_te_form_waits_it_however_the_voice_sounds() -> None:
    """The voice's probability does not tell 「明日の天気を教えて」 said in full from
    「駅までは歩いて、」 going on: the て-form waits its own silence, neither at once
    nor the ceiling, and never past the ceiling."""
    detector = Fixed(TurnConfig(max_silence_ms=1200, text_complete_silence_ms=0,
                                text_open_silence_ms=1200, text_request_probability=0.2,
                                text_request_silence_ms=900))
    for probability in (0.01, 0.3, 0.99):
        assert detector.silence_to_wait_ms(probability, "明日の天気を教えて") == 900
    assert detector.silence_to_wait_ms(0.99, "来週の土曜日に") == 1200   # open as before
    assert detector.silence_to_wait_ms(0.3, "友達と箱根に行くんだ") == 0   # complete too
    capped = Fixed(TurnConfig(max_silence_ms=600, text_complete_silence_ms=0,
                              text_request_silence_ms=900))
    assert capped.silence_to_wait_ms(0.5, "ちょっと待って") == 600
