"""The `smart_turn` detector: its package, its features, its model file, its judgements."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from omoide.api import AudioClip, ModelNotAvailable, resample
from omoide.testing import PluginPackageContract
from omoide_turn_smart import bundled
from omoide_turn_smart.detector import SmartTurn, SmartTurnConfig
from omoide_turn_smart.features import WINDOW_SAMPLES, last_window, log_mel

needs_model = pytest.mark.skipif(bundled.cached_model() is None,
                                 reason=f"model not prepared: {bundled.INSTALL_HINT}")


class TestSmartTurnPackage(PluginPackageContract):
    plugin_name = "turn_smart"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("turn", "smart_turn")}


def test_the_window_is_the_last_8_s_padded_in_front() -> None:
    short = np.ones(16000, np.float32)
    window = last_window(short)
    assert window.shape == (WINDOW_SAMPLES,) and window[-1] == 1 and window[0] == 0
    long = np.arange(WINDOW_SAMPLES + 5, dtype=np.float32)
    assert last_window(long)[0] == 5


def test_the_features_are_those_of_whispers_feature_extractor() -> None:
    transformers = pytest.importorskip("transformers")
    audio = last_window((0.1 * np.random.default_rng(0).standard_normal(48000))
                        .astype(np.float32))
    extractor = transformers.WhisperFeatureExtractor(chunk_length=8)
    theirs = extractor(audio, sampling_rate=16000, padding="max_length", max_length=128000,
                       truncation=True, do_normalize=True, return_tensors="np")
    assert np.abs(log_mel(audio) - theirs.input_features[0]).max() < 1e-5


def test_a_wheel_without_the_model_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "pipecat_ai-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pipecat/__init__.py", "")
    with pytest.raises(ModelNotAvailable):
        bundled.extract_from_wheel(wheel, tmp_path / "cache")
    assert bundled.cached_model(tmp_path / "cache") is None


def test_a_damaged_model_in_the_wheel_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "pipecat_ai-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(bundled.MEMBER, b"not the model")
    with pytest.raises(ModelNotAvailable, match="SHA-256"):
        bundled.extract_from_wheel(wheel, tmp_path / "cache")


@needs_model
def test_the_model_is_extracted_from_the_wheel_and_checked(tmp_path: Path) -> None:
    source = bundled.cached_model()
    assert source is not None
    wheel = tmp_path / "pipecat_ai-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(source, bundled.MEMBER)
    path = bundled.extract_from_wheel(wheel, tmp_path / "cache")
    assert path == bundled.cached_model(tmp_path / "cache")
    assert path.read_bytes() == source.read_bytes()


def spoken(text: str) -> np.ndarray:
    pyopenjtalk = pytest.importorskip("pyopenjtalk")
    wave, rate = pyopenjtalk.tts(text)
    return resample(AudioClip((wave / 32768).astype(np.float32), rate), 16000).samples


@pytest.fixture
async def detector() -> SmartTurn:
    found = SmartTurn(SmartTurnConfig(timeout_s=10.0))
    await found.start()
    return found


@needs_model
async def test_a_finished_question_is_finished(detector: SmartTurn) -> None:
    assert await detector.finished_probability(spoken("週末の予定覚えてる？")) > 0.5


@needs_model
async def test_a_sentence_broken_off_at_a_particle_is_not(detector: SmartTurn) -> None:
    assert await detector.finished_probability(spoken("それでね、")) < 0.5


@needs_model
def test_an_unfinished_judgement_waits_for_the_ceiling(detector: SmartTurn) -> None:
    assert detector.silence_to_wait_ms(0.1) == detector.config.max_silence_ms
    assert detector.silence_to_wait_ms(0.9) == 0
    assert detector.silence_to_wait_ms(None) == detector.config.fallback_silence_ms


def test_an_unsure_finished_judgement_waits_a_little_a_sure_one_not_at_all() -> None:
    detector = SmartTurn(SmartTurnConfig(threshold=0.5, confident=0.9, unsure_silence_ms=800,
                                         max_silence_ms=1200, fallback_silence_ms=700))
    assert detector.silence_to_wait_ms(0.95) == 0        # sure: at once
    assert detector.silence_to_wait_ms(0.6) == 800       # finished, unsure: a short wait
    assert detector.silence_to_wait_ms(0.3) == 1200      # unfinished: the ceiling
    assert detector.silence_to_wait_ms(None) == 700      # failed: silence alone


def test_the_unsure_wait_never_exceeds_the_ceiling_and_is_off_by_default() -> None:
    capped = SmartTurn(SmartTurnConfig(confident=0.9, unsure_silence_ms=3000,
                                       max_silence_ms=1200))
    assert capped.silence_to_wait_ms(0.6) == 1200
    assert SmartTurn(SmartTurnConfig()).silence_to_wait_ms(0.6) == 0


class _Recording:
    """Stands for the onnxruntime session: keeps the features it is given."""

    def __init__(self) -> None:
        self.features: list[np.ndarray] = []

    def run(self, _outputs: object, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.features.append(feeds["input_features"])
        return [np.array([[0.75]], np.float32)]


@pytest.mark.parametrize("silence_ms", [0, 200])
def test_the_model_hears_the_configured_silence_after_the_voice(silence_ms: int) -> None:
    detector = SmartTurn(SmartTurnConfig(trailing_silence_ms=silence_ms))
    session = _Recording()
    detector._session = session  # type: ignore[assignment]
    voice = (0.1 * np.random.default_rng(1).standard_normal(24000)).astype(np.float32)
    assert detector._finished_probability(voice) == 0.75
    heard = np.concatenate([voice, np.zeros(16 * silence_ms, np.float32)])
    assert np.array_equal(session.features[0][0], log_mel(last_window(heard)))


def reading(**settings: object) -> SmartTurn:
    """Smart Turn as configs/offline.yaml runs it, reading the text heard as well."""
    return SmartTurn(SmartTurnConfig.model_validate({
        "timeout_s": 10.0, "max_silence_ms": 1200, "confident": 0.9,
        "unsure_silence_ms": 900, "text_complete_silence_ms": 400, "text_min_probability": 0.01,
        "text_open_silence_ms": 1200, **settings}))


@needs_model
async def test_a_complete_sentence_ends_early_with_what_was_heard(detector: SmartTurn) -> None:
    """OpenJTalk's flat voice often sounds unfinished to the model; the words say it is
    done, so the turn ends after a short silence, not the ceiling."""
    judged = reading()
    for text in ("友達と箱根に行くんだ", "週末の予定覚えてる？", "昨日はラーメンを食べました"):
        probability = await detector.finished_probability(spoken(text))
        assert judged.silence_to_wait_ms(probability, text) <= 400
        assert judged.silence_to_wait_ms(probability, text) <= \
            judged.silence_to_wait_ms(probability)


@needs_model
async def test_a_pause_after_a_particle_waits_with_what_was_heard(detector: SmartTurn) -> None:
    """A mid-sentence pause after a particle or a conjunctive form waits for the
    ceiling, however finished the voice sounded."""
    judged = reading()
    for text in ("来週の土曜日に", "仕事が終わってから", "雨だったけど"):
        probability = await detector.finished_probability(spoken(text))
        assert judged.silence_to_wait_ms(probability, text) == 1200


def test_text_that_says_nothing_leaves_the_audio_to_decide() -> None:
    judged = reading()
    assert judged.silence_to_wait_ms(0.95, "東京") == 0
    assert judged.silence_to_wait_ms(0.6, "東京") == 900
    assert judged.silence_to_wait_ms(0.2, "東京") == 1200


def test_graded_waits_grow_with_the_doubt_within_the_ceiling() -> None:
    """Graded: no step where a little less certainty costs the whole unsure wait or the
    whole ceiling; the corners are the steps' own."""
    graded = SmartTurn(SmartTurnConfig(max_silence_ms=1200, confident=0.95,
                                       unsure_silence_ms=900, graded=True))
    assert graded.silence_to_wait_ms(0.97) == 0
    assert graded.silence_to_wait_ms(0.5) == 900
    assert graded.silence_to_wait_ms(0.0) == 1200
    assert graded.silence_to_wait_ms(None) == graded.config.fallback_silence_ms
    waits = [graded.silence_to_wait_ms(p / 100) for p in range(0, 101)]
    assert waits == sorted(waits, reverse=True)       # the less sure, the longer
    assert 0 < graded.silence_to_wait_ms(0.8) < 900
    assert 900 < graded.silence_to_wait_ms(0.25) < 1200
