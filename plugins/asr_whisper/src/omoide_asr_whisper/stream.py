"""Whisper while the person speaks: the growing utterance is decoded in the background
and the words two passes in a row agree on are kept (LocalAgreement-2).

Each background pass decodes the whole utterance so far, after the settled tokens,
which are forced as the decoder's prefix: the pass generates only what follows them. The
longest common prefix of the tokens two consecutive passes generated (cut back to a whole
character: Japanese characters span several byte-level tokens) joins the settled tokens
and becomes the stable text. The settled tokens are the model's own token ids, never
re-tokenised text, so forcing them costs one decoder step and changes nothing else.

A pass runs on the component's worker thread (one at a time, as every decoding of this
component), once ``stream_pass_s`` of new audio arrived; a pass that fails settles
nothing. Two passes settle words only once the shorter heard ``stream_settle_from_s``
of audio: passes over the first second or two guess the first words from little
context (調子 for 上司), and a settled guess is forced on every later pass.

At finish the stream never decodes the utterance twice. When the last finished pass
heard all the speech (all it did not see is silence, Silero VAD off the worker
thread), its tokens are final; a pass still running then (over the silence before the
turn ended) is called off, not awaited. Else, if a pass is running, the audio it did
not see is checked for speech while it runs; when that is silence its tokens are the
final ones, otherwise it is called off (it stops at its next step: before encoding or
before generating) and one decoding generates what follows the settled tokens, which
are forced as its prefix (the tail is all it generates). An utterance of at most
``stream_final_whole_s`` is decoded whole instead (cheap when short), and that
decoding's window may be wider than the passes' (``stream_final_pad_s``).

The audio is cleaned as the one-shot path cleans it (non-speech dropped by
faster-whisper's Silero VAD, doubtful and looping continuations dropped).

``stream_window: audio`` encodes the utterance at its own length rather than padded to
Whisper's 30 s window: the encoder's cost follows the audio (a 4 s utterance: 0.04 s
instead of 1.45 s on 2 busy cores), which is what lets passes run every fraction of a
second; ``full`` pads as the one-shot path does. ``omoide bench asr --stream`` measures
both against the one-shot path.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from omoide.api import (
    ComponentError,
    RecognitionContext,
    StreamingRecognition,
    Transcript,
)

if TYPE_CHECKING:
    from omoide_asr_whisper.asr import WhisperASR

log = logging.getLogger("omoide.asr.whisper")

SAMPLE_RATE = 16000
FULL_WINDOW_FRAMES = 3000
"""Whisper's 30 s window, in feature frames (100 a second)."""
MIN_WINDOW_FRAMES = 100
"""Shortest encoder input (1 s): shorter audio is padded with silence."""
MIN_NEW_TOKENS = 8
RESTART_TOKENS = 4
"""A continuation that repeats the utterance's first this many tokens is a loop (Whisper
starting the utterance over after its end): it is cut there."""
TOKENS_PER_SECOND = 15
"""Upper bound on tokens per second of audio: Japanese speech needs about a third of it,
so only a repetition loop reaches the bound (and then stops after ~1 s, not ~5 s)."""
MAX_NEW_TOKENS = 200
"""Never more (the prompt takes up to 223 of Whisper's 448 positions)."""
LOOP_COPIES = {1: 3}
"""Consecutive copies of a unit of text that make a repetition loop, by the unit's length
in characters (2 for longer units): 「最近最近」, 「ねねね」; 「ここ」 is a word."""
LOOP_UNIT_MAX = 8
"""Longest unit checked for repetition, in characters."""
IGNORED_IN_LOOPS = str.maketrans("", "", "、。，．,. 　！？!?")
HELD_CHARACTERS = 2
"""Characters held back from settling when two passes agree up to where the shorter one
stopped hearing: its last word may have been cut there (「あたら」 of 新しい guessed as
「あった」), and the longer pass, forced to follow it, could never take it back."""


def token_budget(seconds: float) -> int:
    """Most tokens a decoding of ``seconds`` of speech may generate."""
    return min(MAX_NEW_TOKENS, 10 + int(TOKENS_PER_SECOND * seconds))


def loop_start(text: str) -> int | None:
    """Where the unit ``text`` ends with repeated back to back begins (an index into
    ``text`` without punctuation and spaces); None when it ends in no loop."""
    bare = text.translate(IGNORED_IN_LOOPS)
    for unit in range(1, min(LOOP_UNIT_MAX, len(bare) // 2) + 1):
        copies = LOOP_COPIES.get(unit, 2)
        if len(bare) >= unit * copies and bare[-unit * copies:] == bare[-unit:] * copies:
            return len(bare) - unit * copies
    return None


@dataclass(frozen=True)
class Pass:
    """One decoding of the utterance so far: how many samples it saw and the tokens it
    generated after the settled ones (empty when doubtful or when nothing was said);
    ``forced``: how many settled tokens it was decoded after."""

    covered: int
    tokens: tuple[int, ...]
    forced: int = 0


def cut_restart(settled: Sequence[int], tokens: list[int]) -> list[int]:
    """``tokens`` up to where the utterance starts over (its first tokens again)."""
    whole = [*settled, *tokens]
    head = whole[:RESTART_TOKENS]
    if len(head) < RESTART_TOKENS:
        return tokens
    for i in range(max(RESTART_TOKENS, len(settled)), len(whole) - RESTART_TOKENS + 1):
        if whole[i:i + RESTART_TOKENS] == head:
            return tokens[:i - len(settled)]
    return tokens


class WhisperDecoding:
    """Decodes after a forced token prefix, on the component's loaded model (blocking)."""

    def __init__(self, asr: WhisperASR) -> None:
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        model = asr.model
        self.asr = asr
        self.model = model
        self.tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual,
                                   task="transcribe", language=asr.language or "en")
        self.suppressed = get_suppressed_tokens(self.tokenizer, [-1])

    def _pad_frames(self, final: bool) -> int:
        cfg = self.asr.config
        pad = cfg.stream_final_pad_s if final and cfg.stream_final_pad_s is not None \
            else cfg.stream_pad_s
        return int(pad * 100)

    def text(self, tokens: Sequence[int]) -> str:
        """The text of ``tokens``, without a trailing partial character."""
        return str(self.tokenizer.decode(list(tokens))).rstrip("\ufffd")

    def whole_characters(self, settled: Sequence[int], tokens: Sequence[int]) -> int:
        """How many of ``tokens`` can follow ``settled`` without ending inside a character."""
        n = len(tokens)
        while n and str(self.tokenizer.decode([*settled, *tokens[:n]])).endswith("\ufffd"):
            n -= 1
        return n

    def held_back(self, settled: Sequence[int], tokens: Sequence[int], characters: int) -> int:
        """How many of ``tokens`` leave their last ``characters`` characters (punctuation
        and spaces not counted) out."""
        def bare(k: int) -> int:
            return len(self.text([*settled, *tokens[:k]]).translate(IGNORED_IN_LOOPS))

        whole = bare(len(tokens))
        n = len(tokens)
        while n and bare(n) > whole - characters:
            n -= 1
        return n

    def before_loop(self, settled: Sequence[int], tokens: Sequence[int]) -> int:
        """How many of ``tokens`` can be settled after ``settled`` before the first unit
        that repeats back to back (「最近最近」): every copy stays unsettled, so the next
        pass, or the final decoding, hears that audio again instead of inheriting a loop
        that a short first pass made up."""
        def bare_length(k: int) -> int:
            return len(self.text([*settled, *tokens[:k]]).translate(IGNORED_IN_LOOPS))

        for k in range(1, len(tokens) + 1):
            start = loop_start(self.text([*settled, *tokens[:k]]))
            if start is None:
                continue
            keep = k
            while keep and bare_length(keep) > start:
                keep -= 1
            return self.whole_characters(settled, tokens[:keep])
        return len(tokens)

    def speech(self, audio: np.ndarray) -> np.ndarray:
        """``audio`` without its non-speech, as faster-whisper's ``vad_filter`` keeps it."""
        if not self.asr.config.vad_filter:
            return audio
        from faster_whisper.vad import VadOptions, collect_chunks, get_speech_timestamps

        stamps = get_speech_timestamps(audio, VadOptions())
        if not stamps:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(collect_chunks(audio, stamps)[0])

    def has_speech(self, audio: np.ndarray) -> bool:
        from faster_whisper.vad import VadOptions, get_speech_timestamps

        return bool(get_speech_timestamps(audio, VadOptions()))

    def decode(self, audio: np.ndarray, prompt: dict[str, str], settled: Sequence[int],
               called_off: threading.Event | None = None, final: bool = False) -> Pass | None:
        """Decode ``audio`` (16 kHz) after the ``settled`` tokens; None when
        ``called_off`` was set before the encoding or the generation began. ``final``:
        the decoding at finish (its window may be wider: ``stream_final_pad_s``)."""
        speech = self.speech(np.clip(audio, -1.0, 1.0).astype(np.float32, copy=False))
        if speech.size == 0:
            return Pass(audio.size, (), len(settled))
        if called_off is not None and called_off.is_set():
            return None
        encoded = self.model.encode(self._features(speech, final))
        if called_off is not None and called_off.is_set():
            return None
        cfg = self.asr.config
        previous = self.tokenizer.encode(" " + prompt["initial_prompt"].strip()) \
            if "initial_prompt" in prompt else []
        request = [*self.model.get_prompt(self.tokenizer, previous, without_timestamps=True,
                                          hotwords=prompt.get("hotwords")), *settled]
        budget = token_budget(speech.size / SAMPLE_RATE)
        result = self.model.model.generate(
            encoded, [request], beam_size=cfg.beam_size, return_scores=True,
            max_length=len(request) + max(MIN_NEW_TOKENS, budget - len(settled)),
            suppress_blank=not settled, suppress_tokens=self.suppressed)[0]
        tokens = list(result.sequences_ids[0])
        if tokens[:len(settled)] == list(settled):
            tokens = tokens[len(settled):]
        tokens = cut_restart(settled, [t for t in tokens if t < self.tokenizer.eot])
        kept = () if self._doubtful(result, settled, tokens) else tuple(tokens)
        return Pass(audio.size, kept, len(settled))

    def _features(self, speech: np.ndarray, final: bool = False) -> Any:
        # As the one-shot path reads it: the last frame, made of the extractor's own
        # padding, is not part of the content (faster-whisper's content_frames).
        features = self.model.feature_extractor(speech)[:, :-1]
        frames = FULL_WINDOW_FRAMES if self.asr.config.stream_window == "full" else \
            min(FULL_WINDOW_FRAMES,
                max(MIN_WINDOW_FRAMES, features.shape[-1] + self._pad_frames(final)))
        if features.shape[-1] < frames:
            features = np.pad(features, ((0, 0), (0, frames - features.shape[-1])))
        return np.ascontiguousarray(features[:, :frames])

    def _doubtful(self, result: Any, settled: Sequence[int], tokens: list[int]) -> bool:
        """The one-shot path's rules: a low mean log-probability, or a repetition loop."""
        if not tokens:
            return False
        from faster_whisper.transcribe import get_compression_ratio

        cfg = self.asr.config
        mean = result.scores[0] * len(tokens) / (len(tokens) + 1)
        ratio = get_compression_ratio(str(self.tokenizer.decode([*settled, *tokens])))
        return bool(mean < cfg.min_avg_logprob or ratio > cfg.max_compression_ratio)


class WhisperStream(StreamingRecognition):
    """One utterance heard by Whisper while it is spoken (see the module)."""

    asr: WhisperASR

    def __init__(self, asr: WhisperASR, context: RecognitionContext | None,
                 sample_rate: int) -> None:
        super().__init__(asr, context, sample_rate)
        self._prompt = asr.prompt_arguments(self.merged_context)
        self._settled: tuple[int, ...] = ()
        self._last: Pass | None = None
        self._task: asyncio.Task[None] | None = None
        self._called_off = threading.Event()
        """Set when the running pass's result will not be used (a fresh one per pass)."""
        self._started_at = 0
        self._finishing = False
        self.passes = 0
        """Background passes completed (for tests and benchmarks)."""
        self.failed_passes = 0
        self.final_decoded = False
        """Whether finish had to decode (False: the last pass's tokens were final)."""
        self.called_off = 0
        """Passes running at finish that were called off (they had not heard the end)."""
        self.superseded = 0
        """Passes running at finish that were called off because the last finished pass
        had heard all the speech (only silence followed it)."""

    def _input_grew(self) -> None:
        cfg = self.asr.config
        if self._task is not None or self.closed or self._finishing or self.asr.model is None:
            return
        if self.input_samples < cfg.stream_first_pass_s * SAMPLE_RATE:
            return
        if self.input_samples - self._started_at < cfg.stream_pass_s * SAMPLE_RATE:
            return
        self._start_pass()

    def _start_pass(self) -> None:
        self._started_at = self.input_samples
        self._called_off = threading.Event()
        self._task = asyncio.get_running_loop().create_task(self._run_pass(self._called_off))

    async def heard_so_far(self, through_s: float | None = None) -> str | None:
        """The settled words and the last pass's, from a pass that heard the first
        ``through_s`` seconds (all fed when asked, by default): the last or the running
        pass when it started late enough, else one started now, out of turn (a running
        pass that started too early is called off first); its words are the final ones
        if only silence follows, as any pass's."""
        wanted = self.input_samples if through_s is None else \
            min(self.input_samples, int(through_s * SAMPLE_RATE))
        for _ in range(3):
            if self.closed or self._finishing or self.asr.model is None:
                return None
            last = self._last
            if last is not None and last.covered >= wanted:
                return self.asr.decoding().text([*self._settled, *last.tokens]).strip()
            if self._task is None:
                self._start_pass()
            elif self._started_at < wanted:
                self._called_off.set()   # it missed the last words: it stops at its next step
            task = self._task
            assert task is not None
            await asyncio.shield(task)
        return None

    async def _run_pass(self, called_off: threading.Event) -> None:
        audio, settled = self.input_audio(), self._settled
        try:
            decoding = self.asr.decoding()
            done = await self.asr.run_blocking(
                lambda: decoding.decode(audio, self._prompt, settled, called_off))
        except Exception as exc:  # noqa: BLE001 - a failed pass settles nothing; finish decodes
            self.failed_passes += 1
            log.warning("asr whisper: background pass failed (%s: %s)", type(exc).__name__, exc)
        else:
            if done is not None:
                self.passes += 1
                self._agree(decoding, done)
        finally:
            self._task = None
        self._input_grew()

    def _agree(self, decoding: WhisperDecoding, done: Pass) -> None:
        """LocalAgreement-2: settle what this pass and the previous one both generated."""
        previous, self._last = self._last, done
        if previous is None or \
                previous.covered < self.asr.config.stream_settle_from_s * SAMPLE_RATE:
            return
        n = 0
        for a, b in zip(previous.tokens, done.tokens, strict=False):
            if a != b:
                break
            n += 1
        if n == len(previous.tokens):     # agreed up to where the shorter pass stopped
            n = decoding.held_back(self._settled, done.tokens[:n], HELD_CHARACTERS)
        n = decoding.whole_characters(self._settled, done.tokens[:n])
        n = decoding.before_loop(self._settled, done.tokens[:n])
        if n:
            self._settled += done.tokens[:n]
            self._last = Pass(done.covered, done.tokens[n:], done.forced)
            self._set_stable(decoding.text(self._settled))

    async def _final_streaming(self) -> Transcript:
        if self.asr.model is None:
            raise ComponentError("asr whisper: not started")
        decoding = self.asr.decoding()
        audio = self.input_audio()
        self._finishing = True
        whole = audio.size <= self.asr.config.stream_final_whole_s * SAMPLE_RATE
        if self._task is not None:
            done = self._usable(self._last, whole)
            # the last pass when only silence follows what it heard, else None
            heard_all = (done if done is not None
                         and await self._heard_all(decoding, audio, done) else None)
            if heard_all is not None and self._task is not None:
                self._called_off.set()   # the running pass would only hear more silence
                self.superseded += 1
                return self._transcript(decoding, (*self._settled, *heard_all.tokens))
            if heard_all is not None:
                pass   # the running pass ended meanwhile: its words are the last ones
            elif not await self._settle_running(decoding, audio):
                self._last = None    # the speech it did not hear is decoded now
            elif (done := self._usable(self._last, whole)) is not None and \
                    done.covered == self._started_at:
                return self._transcript(decoding, (*self._settled, *done.tokens))
        last = self._usable(self._last, whole)
        if last is not None and await self._heard_all(decoding, audio, last):
            return self._transcript(decoding, (*self._settled, *last.tokens))
        self.final_decoded = True
        forced = () if whole else self._settled
        ended = await self.asr.run_blocking(
            lambda: decoding.decode(audio, self._prompt, forced, final=True))
        return self._transcript(decoding, (*forced, *ended.tokens) if ended else forced)

    def _transcript(self, decoding: WhisperDecoding, tokens: Sequence[int]) -> Transcript:
        return Transcript(decoding.text(tokens).strip(), self.asr.config.language)

    @staticmethod
    def _usable(last: Pass | None, whole: bool) -> Pass | None:
        """``last`` unless the utterance is decoded whole and it was forced to follow
        settled words."""
        return None if last is None or (whole and last.forced) else last

    async def _heard_all(self, decoding: WhisperDecoding, audio: np.ndarray,
                         done: Pass) -> bool:
        """Whether ``done`` heard all the speech: all it did not see is silence."""
        unseen = audio[done.covered:]
        if not unseen.size:
            return True
        return self.asr.config.stream_reuse_silence and \
            not await asyncio.to_thread(decoding.has_speech, unseen)

    async def _settle_running(self, decoding: WhisperDecoding, audio: np.ndarray) -> bool:
        """The pass still running at finish (or that ended while finish was checking
        the silence; its words are then the last pass's): awaited and True when all it
        did not see is silence (its tokens are then final); else called off (it stops
        at its next step) and False."""
        heard_all = await self._heard_all(decoding, audio, Pass(self._started_at, ()))
        task = self._task   # read after the check: the pass may have ended meanwhile
        if not heard_all and task is not None:
            self._called_off.set()
            self.called_off += 1
        if task is not None:
            await asyncio.shield(task)
        return heard_all

    async def _closing(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
