"""asr `whisper`: Whisper base from the PyPI packages, on real (synthesised) Japanese speech.

One model is loaded per module and the real transcriptions are few; what does not need
the model's output (silence, noise, refusals, prompts) is checked without decoding.
"""

from __future__ import annotations

import io
import itertools
import threading
import wave
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from omoide.audio import read_wav
from omoide.components import RecognitionContext
from omoide.errors import ConfigError, InvalidInput
from omoide.testing import ASRContract, PluginPackageContract
from omoide.types import AudioClip
from omoide_asr_whisper.asr import WhisperASR, WhisperASRConfig

Say = Callable[..., AudioClip]
PLAN = "来週の土曜日に友達と箱根に行くんだ"


class TestWhisperASRContract(ASRContract):
    component_cls = WhisperASR

    @pytest.fixture
    def component(self, whisper: WhisperASR) -> WhisperASR:  # type: ignore[override]
        return whisper

    @pytest.fixture
    def speech(self, say: Say) -> AudioClip:
        return say("また行きたいな")


class TestASRWhisperPackage(PluginPackageContract):
    plugin_name = "asr_whisper"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("asr", "whisper")}


def _stereo_wav(clip: AudioClip, rate: int) -> bytes:
    from omoide.audio import resample

    mono = resample(clip, rate).samples
    pcm = (np.clip(mono, -1, 1) * 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.repeat(pcm, 2).tobytes())
    return buf.getvalue()


# -- what it hears ---------------------------------------------------------------------
async def test_japanese_speech_is_transcribed_in_japanese(whisper: WhisperASR,
                                                          say: Say) -> None:
    result = await whisper.transcribe(say(PLAN))
    assert "土曜日" in result.text and "友達" in result.text
    assert result.language == "Japanese"


async def test_a_stereo_8khz_recording_is_mixed_down_and_resampled(whisper: WhisperASR,
                                                                    say: Say) -> None:
    clip = read_wav(_stereo_wav(say(PLAN), 8000))
    assert clip.sample_rate == 8000
    assert "土曜日" in (await whisper.transcribe(clip)).text


async def test_a_stereo_44_1khz_recording_is_mixed_down_and_resampled(whisper: WhisperASR,
                                                                       say: Say) -> None:
    clip = read_wav(_stereo_wav(say(PLAN), 44100))
    assert clip.sample_rate == 44100
    assert "土曜日" in (await whisper.transcribe(clip)).text


async def test_clipped_overdriven_speech_is_still_recognised(whisper: WhisperASR,
                                                            say: Say) -> None:
    clip = say(PLAN)
    overdriven = AudioClip(clip.samples * 4.0, clip.sample_rate)
    assert float(np.mean(np.abs(overdriven.samples) > 1.0)) > 0.05  # 5%+ beyond full scale
    assert "土曜日" in (await whisper.transcribe(overdriven)).text


# -- what it must not hear --------------------------------------------------------------
async def test_silence_gives_an_empty_transcript(whisper: WhisperASR) -> None:
    result = await whisper.transcribe(AudioClip(np.zeros(3 * 16000, dtype=np.float32), 16000))
    assert result.text == ""


async def test_noise_gives_an_empty_transcript_even_with_a_context(
        whisper: WhisperASR) -> None:
    noise = np.random.default_rng(0).standard_normal(3 * 16000).astype(np.float32) * 0.1
    context = RecognitionContext.of(["箱根", "ゆき", "ポチ"])
    assert (await whisper.transcribe(AudioClip(noise, 16000), context)).text == ""


async def test_doubtful_segments_and_repetition_loops_are_dropped(whisper: WhisperASR,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    class Segment:
        def __init__(self, text: str, avg_logprob: float, compression_ratio: float) -> None:
            self.text, self.avg_logprob = text, avg_logprob
            self.compression_ratio = compression_ratio

    class Info:
        language = "ja"

    loop = "横浜 " * 40

    def transcribe(*args: Any, **kwargs: Any) -> tuple[list[Segment], Info]:
        return [Segment("箱根に行く", -0.2, 0.9), Segment("おはようございます。", -1.8, 0.7),
                Segment(loop, -0.3, 9.5)], Info()

    monkeypatch.setattr(whisper._model, "transcribe", transcribe)
    decoded = whisper.decode(np.zeros(16000, dtype=np.float32), {})
    assert decoded.text == "箱根に行く"
    assert decoded.dropped == ("おはようございます。", loop)


# -- the memory context -------------------------------------------------------------------
def test_the_context_becomes_a_japanese_list_prompt() -> None:
    asr = WhisperASR(WhisperASRConfig())
    context = RecognitionContext.of(["箱根", "ゆき"])
    assert asr.prompt_arguments(context) == {"initial_prompt": "箱根、ゆき。"}
    assert asr.prompt_arguments(RecognitionContext()) == {}


@pytest.mark.parametrize(("use", "keys"), [("hotwords", {"hotwords"}),
                                           ("both", {"hotwords", "initial_prompt"}),
                                           ("none", set())])
def test_context_as_chooses_how_whisper_gets_the_context(use: str, keys: set[str]) -> None:
    asr = WhisperASR(WhisperASRConfig(context_as=use))  # type: ignore[arg-type]
    assert set(asr.prompt_arguments(RecognitionContext.of(["箱根"]))) == keys


async def test_the_persons_vocabulary_reaches_whisper_as_its_initial_prompt(
        whisper: WhisperASR, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    original = whisper._model.transcribe

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(whisper._model, "transcribe", spy)
    silence = AudioClip(np.zeros(16000, dtype=np.float32), 16000)  # the VAD skips decoding
    await whisper.transcribe(silence, RecognitionContext.of(["箱根", "ゆき"]))
    assert seen[-1]["initial_prompt"] == "箱根、ゆき。"


# -- refusals ---------------------------------------------------------------------------
async def test_a_ten_minute_recording_is_refused_by_default(whisper: WhisperASR) -> None:
    with pytest.raises(InvalidInput, match="longer than"):
        await whisper.transcribe(AudioClip(np.zeros(600 * 16000, dtype=np.float32), 16000))


@pytest.mark.slow
async def test_a_ten_minute_recording_allowed_by_config_costs_only_its_speech(
        say: Say) -> None:
    asr = WhisperASR(WhisperASRConfig(max_seconds=600, timeout_s=300))
    await asr.start()
    try:
        rng = np.random.default_rng(1)
        samples = rng.standard_normal(600 * 16000).astype(np.float32) * 0.003  # room noise
        plan = say(PLAN).samples
        samples[300 * 16000:300 * 16000 + plan.size] += plan
        result = await asr.transcribe(AudioClip(samples, 16000))
    finally:
        await asr.stop()
    assert "土曜日" in result.text


async def test_an_unknown_language_is_a_config_error() -> None:
    asr = WhisperASR(WhisperASRConfig(language="Klingon"))
    with pytest.raises(ConfigError, match=r"asr\.language"):
        await asr.start()


def test_languages_are_accepted_by_english_name_or_code() -> None:
    from omoide_asr_whisper.languages import whisper_language

    assert whisper_language("Japanese") == whisper_language("ja") == "ja"
    assert whisper_language("auto") is None


# -- while the person speaks ------------------------------------------------------------
async def test_speech_streamed_in_real_time_gives_the_one_shot_transcript(
        whisper: WhisperASR, say: Say) -> None:
    """Background passes settle words while the audio arrives; the final transcript is
    the one-shot one (or within a character or two of it), and the stable partials only
    grow, each a beginning of the final text."""
    import asyncio

    clip = say(PLAN)
    one_shot = await whisper.transcribe(clip)
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    partials: list[str] = []

    async def read() -> None:
        async for text in stream.partials():
            partials.append(text)

    reader = asyncio.create_task(read())
    from omoide.testing.contracts import audio_frames

    for frame in audio_frames(clip, 0.06):
        stream.feed(frame)
        await asyncio.sleep(0.06)
    final = await stream.finish()
    await reader
    assert "土曜日" in final.text and "友達" in final.text
    assert _edits(one_shot.text.rstrip("。"), final.text.rstrip("。")) <= 2
    assert stream.passes >= 2 and partials, "words were settled while the audio arrived"
    assert all(b.startswith(a) for a, b in itertools.pairwise(partials))
    assert final.text.startswith(partials[-1])
    assert final.language == "Japanese"


async def test_a_stream_of_silence_gives_an_empty_transcript(whisper: WhisperASR) -> None:
    stream = whisper.open_stream()
    for _ in range(40):
        stream.feed(np.zeros(960, dtype=np.float32))
    assert (await stream.finish()).text == ""


async def test_a_failing_background_pass_does_not_lose_the_utterance(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from omoide_asr_whisper.stream import WhisperDecoding

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the decoder broke")

    monkeypatch.setattr(WhisperDecoding, "decode", broken)
    clip = say(PLAN)
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    for i in range(0, clip.samples.size, 4800):
        stream.feed(clip.samples[i:i + 4800])
        await asyncio.sleep(0.01)
    final = await stream.finish()
    assert "土曜日" in final.text  # decoded whole by transcribe instead


def recorded_decodes(whisper: WhisperASR, monkeypatch: pytest.MonkeyPatch
                     ) -> tuple[list[tuple[int, bool]], threading.Event]:
    """Every decoding of ``whisper``'s streams as (samples, called off by its end), and
    an event set when the first one starts."""
    decoding = whisper.decoding()
    original, calls, started = decoding.decode, [], threading.Event()

    def decode(audio: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        started.set()
        done = original(audio, *args, **kwargs)
        called_off = args[2] if len(args) > 2 else None
        calls.append((audio.size, bool(called_off is not None and called_off.is_set())))
        return done

    monkeypatch.setattr(decoding, "decode", decode)
    return calls, started


async def test_a_pass_that_missed_the_end_is_called_off_and_the_end_decoded_once(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    """The person spoke on after a pass began: at finish that pass is called off (it stops
    before its next step) and one decoding of the whole utterance gives the transcript."""
    import asyncio

    clip = say(PLAN)
    one_shot = await whisper.transcribe(clip)
    calls, started = recorded_decodes(whisper, monkeypatch)
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    half = clip.samples.size // 2
    stream.feed(clip.samples[:half])   # more than the first pass needs: a pass starts
    assert await asyncio.to_thread(started.wait, 60), "no background pass started"
    stream.feed(clip.samples[half:])
    final = await stream.finish()
    assert stream.called_off == 1 and stream.final_decoded
    assert calls == [(half, True), (clip.samples.size, False)]
    assert _edits(one_shot.text.rstrip("。"), final.text.rstrip("。")) <= 2


async def test_a_pass_running_at_finish_that_heard_all_the_speech_is_final(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only silence came after the running pass began: its words are the transcript and
    nothing is decoded again."""
    import asyncio

    clip = say(PLAN)
    one_shot = await whisper.transcribe(clip)
    calls, started = recorded_decodes(whisper, monkeypatch)
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    stream.feed(clip.samples)
    assert await asyncio.to_thread(started.wait, 60), "no background pass started"
    stream.feed(np.zeros(8000, dtype=np.float32))    # the silence before the turn ends
    final = await stream.finish()
    assert stream.called_off == 0 and not stream.final_decoded
    assert calls == [(clip.samples.size, False)]
    assert _edits(one_shot.text.rstrip("。"), final.text.rstrip("。")) <= 2


async def test_a_pass_over_the_silence_after_the_words_is_not_awaited(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    """A finished pass heard all the words and a later one runs over the silence that
    followed (the turn had not ended yet): at finish the later one is called off instead
    of awaited, and the finished pass's words are the transcript."""
    clip = say(PLAN)
    calls, _started = recorded_decodes(whisper, monkeypatch)
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    stream.feed(clip.samples)
    heard = await stream.heard_so_far()
    stream.feed(np.zeros(int(whisper.config.stream_pass_s * 16000), dtype=np.float32))
    assert stream._task is not None, "a pass over the silence started"
    final = await stream.finish()
    assert heard and heard.rstrip("。") == final.text.rstrip("。")
    assert stream.superseded == 1 and not stream.final_decoded
    assert calls[0] == (clip.samples.size, False)


async def test_what_was_heard_up_to_a_pause_is_decoded_once_and_is_the_end(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn stage asks at a pause what was heard so far: a pass that heard all the
    audio answers (here the one the audio started); only silence follows, so its words
    are the transcript and nothing is decoded again."""
    clip = say(PLAN)
    calls, _started = recorded_decodes(whisper, monkeypatch)
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    stream.feed(clip.samples)
    heard = await stream.heard_so_far()
    stream.feed(np.zeros(4000, dtype=np.float32))    # silence, less than starts a pass
    final = await stream.finish()
    assert heard and heard.rstrip("。") == final.text.rstrip("。")
    assert calls == [(clip.samples.size, False)] and not stream.final_decoded


async def test_a_pass_that_missed_the_last_words_is_called_off_when_asked(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    clip = say(PLAN)
    one_shot = await whisper.transcribe(clip)
    calls, started = recorded_decodes(whisper, monkeypatch)
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    half = clip.samples.size // 2
    stream.feed(clip.samples[:half])     # more than the first pass needs: a pass starts
    assert await asyncio.to_thread(started.wait, 60), "no background pass started"
    stream.feed(clip.samples[half:])
    heard = await stream.heard_so_far()
    await stream.cancel()
    assert [size for size, _ in calls] == [half, clip.samples.size]
    assert heard is not None and _edits(one_shot.text.rstrip("。"), heard.rstrip("。")) <= 2


async def test_a_short_utterance_is_decoded_when_asked_before_any_pass(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    clip = say("また行きたいな")
    calls, _started = recorded_decodes(whisper, monkeypatch)
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    stream.feed(clip.samples[:16000])     # shorter than the first pass waits for
    assert stream.passes == 0
    heard = await stream.heard_so_far()
    await stream.cancel()
    assert heard is not None and stream.passes == 1 and calls == [(16000, False)]
    assert await stream.heard_so_far() is None     # an ended stream says nothing


def _edits(a: str, b: str) -> int:
    """Levenshtein distance in characters."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def test_a_loop_that_starts_the_utterance_over_is_cut() -> None:
    from omoide_asr_whisper.stream import cut_restart

    assert cut_restart([1, 2], [3, 4, 5, 1, 2, 3, 4, 1]) == [3, 4, 5]
    assert cut_restart([], [1, 2, 3, 4, 5]) == [1, 2, 3, 4, 5]


def test_streaming_off_or_auto_language_buffers_like_transcribe() -> None:
    from omoide.api import StreamingRecognition

    for config in (WhisperASRConfig(streaming=False), WhisperASRConfig(language="auto"),
                   WhisperASRConfig(temperature_fallback=True)):
        assert not isinstance(WhisperASR(config).open_stream(), StreamingRecognition)
    assert isinstance(WhisperASR(WhisperASRConfig()).open_stream(), StreamingRecognition)


def test_a_unit_repeated_back_to_back_is_a_loop_and_a_doubled_kana_is_a_word() -> None:
    from omoide_asr_whisper.stream import loop_start

    assert loop_start("あの最近最近") == 2
    assert loop_start("最近、最近、") == 0
    assert loop_start("ねねね") == 0
    assert loop_start("ここ") is None
    assert loop_start("週末の予定") is None


async def test_words_a_pass_repeats_back_to_back_are_not_settled(whisper: WhisperASR) -> None:
    decoding = whisper.decoding()
    tokens = decoding.tokenizer.encode("あの最近最近最近仕事")
    kept = decoding.before_loop((), tokens)
    assert decoding.text(tokens[:kept]) == "あの"
    plain = decoding.tokenizer.encode("仕事終わりに")
    assert decoding.before_loop((), plain) == len(plain)


async def test_stopping_waits_for_a_background_pass_still_on_the_worker(
        say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import threading

    whisper = WhisperASR(WhisperASRConfig())
    await whisper.start()
    decoding = whisper.decoding()
    started, finished = threading.Event(), []
    original = decoding.decode

    def decode(*args: Any) -> Any:
        started.set()
        done = original(*args)
        finished.append(True)
        return done

    monkeypatch.setattr(decoding, "decode", decode)
    clip = say("最近、仕事終わりにギターの練習をしてるんだ")
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    stream.feed(clip.samples)   # the whole utterance at once: a pass starts
    assert await asyncio.to_thread(started.wait, 60), "no background pass started"
    await stream.cancel()       # the pass goes on decoding on the worker thread
    await whisper.stop()
    assert finished == [True], "stop returned while CTranslate2 was still decoding"


async def test_a_pass_reads_the_features_the_one_shot_path_reads(whisper: WhisperASR,
                                                                  say: Say) -> None:
    """The extractor pads the audio by one hop, which makes one frame more than the
    content; the one-shot path leaves it out (faster-whisper's content frames) and so
    does a pass, whose window then holds the content and silence padding only."""
    speech = say(PLAN).samples
    decoding = whisper.decoding()
    content = whisper.model.feature_extractor(speech)[:, :-1]
    window = decoding._features(speech)
    pad = int(whisper.config.stream_pad_s * 100)
    assert window.shape[-1] == content.shape[-1] + pad
    assert np.array_equal(window[:, :content.shape[-1]], content)
    assert not window[:, content.shape[-1]:].any()


async def test_the_last_characters_a_shorter_pass_heard_are_not_settled(
        whisper: WhisperASR) -> None:
    """Two passes that agree up to where the shorter one stopped hearing: its last word
    may have been cut there, so its last two characters stay open for the next pass."""
    from omoide_asr_whisper.stream import Pass, WhisperStream

    decoding = whisper.decoding()
    stream = WhisperStream(whisper, None, 16000)
    short = tuple(decoding.tokenizer.encode("駅前にあった"))
    longer = tuple(decoding.tokenizer.encode("駅前にあったらしい"))
    stream._agree(decoding, Pass(48000, short))
    stream._agree(decoding, Pass(56000, longer))
    assert stream.stable_text == "駅前にあ"
    assert decoding.text([*stream._settled, *(stream._last or Pass(0, ())).tokens]) == \
        "駅前にあったらしい"
    # agreement that stops before the shorter pass's end is settled whole
    other = WhisperStream(whisper, None, 16000)
    other._agree(decoding, Pass(48000, tuple(decoding.tokenizer.encode("週末は鎌倉に"))))
    other._agree(decoding, Pass(56000, tuple(decoding.tokenizer.encode("週末は仕事"))))
    assert other.stable_text == "週末は"


async def test_passes_that_heard_too_little_settle_nothing(
        whisper: WhisperASR, monkeypatch: pytest.MonkeyPatch) -> None:
    """Passes over the first second or two guess the first words from little context
    (調子 for 上司): their agreement settles nothing until the shorter of the two heard
    stream_settle_from_s."""
    from omoide_asr_whisper.stream import Pass, WhisperStream

    monkeypatch.setattr(whisper, "config",
                        whisper.config.model_copy(update={"stream_settle_from_s": 2.5}))
    decoding = whisper.decoding()
    stream = WhisperStream(whisper, None, 16000)
    words = tuple(decoding.tokenizer.encode("上司に相談してみる"))
    for seconds in (1.5, 2.0, 2.5):
        stream._agree(decoding, Pass(int(seconds * 16000), words))
        assert stream.stable_text == "", f"settled after a pass of {seconds} s"
    stream._agree(decoding, Pass(48000, words))    # the shorter one heard 2.5 s
    assert stream.stable_text == "上司に相談して"   # all but the last two characters


async def test_a_short_utterance_is_decoded_whole_at_the_end(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch) -> None:
    """At most stream_final_whole_s long, the utterance's decoding at the end is of all
    of it, not of what follows the settled words (here a wrong guess, 調子): the result
    is the one-shot transcript. Longer, the settled words stay."""
    from omoide_asr_whisper.stream import Pass

    clip = say(PLAN)
    one_shot = await whisper.transcribe(clip)
    decoding = whisper.decoding()
    guess = tuple(decoding.tokenizer.encode("調子"))
    finals = []
    for whole_s in (10.0, 0.0):
        monkeypatch.setattr(whisper, "config", whisper.config.model_copy(update={
            "stream_final_whole_s": whole_s, "stream_first_pass_s": 30.0}))
        stream = whisper.open_stream(sample_rate=clip.sample_rate)
        stream.feed(clip.samples)
        assert stream.passes == 0
        stream._settled = guess    # as if two early passes had agreed on it
        stream._last = Pass(16000, (), len(guess))
        finals.append((await stream.finish()).text)
        assert stream.final_decoded
    assert _edits(one_shot.text.rstrip("。"), finals[0].rstrip("。")) <= 2
    assert not finals[0].startswith("調子") and finals[1].startswith("調子")


async def test_the_decoding_at_the_end_may_read_a_wider_window(whisper: WhisperASR,
                                                               say: Say,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    speech = say(PLAN).samples
    monkeypatch.setattr(whisper, "config",
                        whisper.config.model_copy(update={"stream_pad_s": 3.0,
                                                          "stream_final_pad_s": 6.0}))
    decoding = whisper.decoding()
    content = whisper.model.feature_extractor(speech)[:, :-1].shape[-1]
    assert decoding._features(speech).shape[-1] == content + 300
    assert decoding._features(speech, final=True).shape[-1] == content + 600


@pytest.mark.parametrize("after", ["silence", "speech"])
async def test_a_pass_that_ends_while_finish_checks_the_silence_gives_the_transcript(
        whisper: WhisperASR, say: Say, monkeypatch: pytest.MonkeyPatch, after: str) -> None:
    """finish checks in a thread whether what a pass did not hear is silence; the pass
    still running may end meanwhile (it settles words as it ends). Its words are then
    the transcript, once, and nothing fails or is decoded again."""
    import time

    clip = say(PLAN)
    one_shot = await whisper.transcribe(clip)
    decoding = whisper.decoding()
    stream = whisper.open_stream(sample_rate=clip.sample_rate)
    original = decoding.has_speech

    def has_speech_once_the_pass_ended(audio: np.ndarray) -> bool:
        deadline = time.monotonic() + 60
        while stream._task is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        return original(audio)

    monkeypatch.setattr(decoding, "has_speech", has_speech_once_the_pass_ended)
    step = int(whisper.config.stream_pass_s * 16000)
    first = clip.samples if after == "silence" else clip.samples[:-step]
    stream.feed(first)
    assert await stream.heard_so_far()
    stream.feed(np.zeros(step, dtype=np.float32) if after == "silence"
                else clip.samples[-step:])
    assert stream._task is not None, "a pass over the rest started"
    final = await stream.finish()
    assert not stream.final_decoded and stream.passes == 2
    assert _edits(one_shot.text.rstrip("。"), final.text.rstrip("。")) <= 2
