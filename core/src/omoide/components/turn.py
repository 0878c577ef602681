"""End of turn: given the utterance so far, is the person finished or only pausing?

Silence alone cannot tell 「来週の土曜日に、」 (a pause for breath) from 「行くんだ。」 (done).
A turn detector reads the audio of the utterance up to the pause and returns the
probability that it is finished. A device asks it when its VAD hears speech stop and
then waits :meth:`TurnDetector.silence_to_wait_ms` of silence before it ends the turn:

- finished (probability at or above ``threshold``): at once, so a short silence after a
  complete sentence ends the turn;
- pausing (a filler, a mid-sentence pause): until ``max_silence_ms`` of silence (the
  ceiling), unless the person speaks again, which continues the same utterance;
- the detector failed or is too slow: ``fallback_silence_ms``, silence-only endpointing.

What the recogniser heard so far, when the device has it, is evidence too
(:func:`sentence_end`, read by Sudachi): a Japanese utterance that ends in a predicate's
final form or a sentence-final particle (です, ました, 行くんだ, いいよ, 覚えてる？) is
complete; one that ends in a case, binding or conjunctive particle, a conjunctive form, a
filler or 「、」 (土曜日に, 雨だけど, 食べて, えーと) is not. With ``text_complete_silence_ms``
set, :meth:`TurnDetector.silence_to_wait_ms` given the text waits at most that long after
a complete one (unless the audio's probability is below ``text_min_probability``), and at
least ``text_open_silence_ms`` after an open one (never at once); anything else (a noun,
English, nothing heard) leaves the audio's judgement alone. Whisper ends fragments with
「？」 too (「どうやって?」), so a question mark counts only when the words before it end
complete. Words that end in a predicate's て-form (教えて, 待って) are a request said in
full or a sentence going on (食べて、): with ``text_request_probability`` set they count as
complete when the audio's probability reaches it, else as open; with
``text_request_silence_ms`` set they wait that long whatever the probability (the
voice's probability does not tell the two apart: ``omoide bench turn`` heard requests
said in full at 0.007-0.17 and sentences going on at 0.006-0.99). A て after an
auxiliary's く-form (眠れなくて, 行きたくて) is a reason going on, never a request.

Without a ``turn`` stage in the config the VAD's own ``min_silence_ms`` ends the turn
(silence-only endpointing), as before. A plugin implements
:meth:`TurnDetector._finished_probability` for 16 kHz mono audio of at most
``max_audio_s`` seconds (the core keeps the last ``max_audio_s`` of longer utterances);
the core's :meth:`TurnDetector.finished_probability` runs it on the component's worker
thread under its time budget.
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from omoide.components.base import Component, ComponentConfig
from omoide.errors import InvalidInput
from omoide.types import FloatArray, Priority

log = logging.getLogger("omoide.turn")

SentenceEnd = Literal["complete", "open", "request"]
OPEN_PARTICLES = {"格助詞", "係助詞", "副助詞", "接続助詞"}
"""Particles after which the sentence goes on (に を は と が も けど から て し ...)."""
PREDICATES = {"動詞", "形容詞", "助動詞"}
COMPLETE_MARKS = set("？?！!")
IGNORED_MARKS = "。.．…~〜ー 　"


class TurnConfig(ComponentConfig):
    threshold: float = Field(
        0.5, ge=0, le=1, description="Probability at or above which the utterance counts as "
                                     "finished and the turn ends at once.")
    max_silence_ms: int = Field(
        2000, ge=100, le=10000, description="The ceiling: silence that ends a turn the "
                                            "detector judged unfinished (a filler, a "
                                            "mid-sentence pause).")
    fallback_silence_ms: int = Field(
        700, ge=100, le=10000, description="Silence that ends the turn when the detector "
                                           "fails or exceeds its time budget (silence-only "
                                           "endpointing).")
    timeout_s: float = Field(1.0, gt=0, description="Time budget of one judgement, in "
                                                    "seconds; slower counts as failed.")
    retries: int = Field(0, ge=0, le=10, description="Extra attempts after a retryable "
                                                     "failure (a late answer is no answer).")
    text_complete_silence_ms: int | None = Field(
        None, ge=0, le=10000,
        description="With what the recogniser heard so far: silence that ends at most a "
                    "turn whose text ends complete (a predicate's final form, a "
                    "sentence-final particle) when the audio's probability reaches "
                    "text_min_probability. None: the text is not read.")
    text_min_probability: float = Field(
        0.05, ge=0, le=1,
        description="Probability below which a complete text does not shorten the wait: "
                    "the audio sure the person is mid-sentence is not overruled by words "
                    "the recogniser may have misheard.")
    text_open_silence_ms: int = Field(
        1000, ge=0, le=10000,
        description="With text_complete_silence_ms set: silence that a turn whose text ends "
                    "open (a particle such as に/は/けど/から/て, a conjunctive form, a "
                    "filler, 「、」) waits at least, even when judged finished; at most "
                    "max_silence_ms.")
    text_request_probability: float | None = Field(
        None, ge=0, le=1,
        description="With text_complete_silence_ms set: probability at or above which "
                    "words that end in a predicate's て-form (教えて, 待って, 忘れないで) "
                    "read as complete (a request said in full); below it, as open (a "
                    "sentence going on: 食べて、). None: always open.")
    text_request_silence_ms: int | None = Field(
        None, ge=0, le=10000,
        description="With text_complete_silence_ms set: silence that words ending in a "
                    "predicate's て-form wait whatever the audio's probability (a request "
                    "said in full and a sentence going on sound alike to the detector); at "
                    "most max_silence_ms. Takes the place of text_request_probability. "
                    "None: text_request_probability decides.")


class TurnDetector(Component[TurnConfig]):
    """Judges whether an utterance is finished. ``_finished_probability`` is blocking."""

    kind: ClassVar[str] = "turn"
    Config: ClassVar[type[TurnConfig]] = TurnConfig
    sample_rate: ClassVar[int] = 16000
    max_audio_s: ClassVar[float] = 8.0
    """The longest audio the model reads; longer utterances are judged on their end."""

    @abstractmethod
    def _finished_probability(self, audio: FloatArray) -> float:
        """Probability in [0, 1] that ``audio`` (16 kHz mono float32, at most
        ``max_audio_s`` long, ending where the person stopped) is a finished turn."""

    async def finished_probability(self, audio: FloatArray) -> float:
        """Probability that the utterance ``audio`` (16 kHz, up to the pause) is finished.

        Raises :class:`~omoide.errors.ComponentError` (a timeout among them) when the
        detector fails; the caller then falls back to silence-only endpointing."""
        if audio.ndim != 1 or not len(audio):
            raise InvalidInput(f"turn {self.name}: expected non-empty mono audio, "
                               f"got shape {audio.shape}")
        keep = int(self.max_audio_s * self.sample_rate)
        clip = np.ascontiguousarray(audio[-keep:], dtype=np.float32)

        async def attempt() -> float:
            return await self.run_blocking(lambda: self._finished_probability(clip),
                                           Priority.INTERACTIVE)

        probability = await self._call("finished_probability", attempt)
        return min(1.0, max(0.0, float(probability)))

    async def start(self) -> None:
        """Start the detector, and load what reads the text heard when it reads it."""
        await super().start()
        if self.reads_text:
            await asyncio.to_thread(warm_up_sentence_reading)

    @property
    def reads_text(self) -> bool:
        """Whether :meth:`silence_to_wait_ms` uses the text heard so far."""
        return self.config.text_complete_silence_ms is not None

    def silence_to_wait_ms(self, probability: float | None, text: str | None = None) -> int:
        """Silence after the pause that ends the turn, given the judgement (None: the
        detector failed) and, when known, what the recogniser heard up to the pause."""
        wait = self._audio_wait_ms(probability)
        cfg = self.config
        if probability is None or text is None or cfg.text_complete_silence_ms is None:
            return wait
        end = sentence_end(text)
        if end == "request" and cfg.text_request_silence_ms is not None:
            return min(cfg.text_request_silence_ms, cfg.max_silence_ms)
        if end == "request":
            request = cfg.text_request_probability
            end = "complete" if request is not None and probability >= request else "open"
        if end == "complete" and probability >= cfg.text_min_probability:
            return min(wait, cfg.text_complete_silence_ms)
        if end == "open":
            return max(wait, min(cfg.text_open_silence_ms, cfg.max_silence_ms))
        return wait

    def _audio_wait_ms(self, probability: float | None) -> int:
        """The wait the audio's judgement alone gives (plugins may grade it)."""
        if probability is None:
            return self.config.fallback_silence_ms
        return 0 if probability >= self.config.threshold else self.config.max_silence_ms


def _morphemes(text: str) -> list[Any] | None:
    """Sudachi's words of ``text`` (mode C) from the process's one analyser (the memory's
    :func:`~omoide.memory.language.lexicon.analyzer`: one dictionary per process, a
    tokenizer per thread), or None when Sudachi is unavailable."""
    from omoide.memory.language.lexicon import analyzer

    reader = analyzer()
    if not reader.available:
        return None
    return reader.morphemes(text)


def _request_form(words: list[Any]) -> bool:
    """Whether ``words`` end in a predicate's て-form (教えて, 待って, 急いで, 忘れないで,
    見てて): a request said in full, or a sentence going on (食べて、飲んだ)."""
    if len(words) < 2 or words[-1].surface() not in ("て", "で"):
        return False
    before = words[-2]
    if before.part_of_speech()[0] == "助動詞" and before.surface().endswith("く"):
        return False   # なくて, たくて: an adjective's く-form, a reason (a request is ないで)
    return words[-1].part_of_speech()[:2] == ("助詞", "接続助詞") and \
        before.part_of_speech()[0] in ("動詞", "助動詞")


QUESTION_WORDS = ("誰", "だれ", "どこ", "いつ", "どれ", "どっち", "どちら", "いくら", "いくつ")
"""Words that ask; so does a word made with 何 (何時, 何曜, 何人), but not 何 alone,
which is also said while searching for a word (何、あれ…)."""


def _ends_in_question_word(words: list[Any]) -> bool:
    """True when the nouns at the end of ``words`` (their last run of nouns, pronouns
    and suffixes) include a question word (:data:`QUESTION_WORDS`, or a word made with
    何: 今何時, 何曜日, 駅どこ); False otherwise.

    :func:`sentence_end` asks it of the words before a trailing 「、」: after a question
    word that mark tells nothing about whether the turn is over (Whisper writes a short
    question, 「今何時？」, as 「今何時、」), so the words do not decide and the voice
    does. Such words are not read as a complete sentence either: 「今何時|か教えてくれる？」
    pauses there too (omoide bench turn: reading them as complete cut one more sentence
    a voice)."""
    for word in reversed(words):
        if word.part_of_speech()[0] not in ("名詞", "代名詞", "接尾辞"):
            return False
        surface = word.surface()
        if surface in QUESTION_WORDS or (surface.startswith("何") and len(surface) > 1):
            return True
    return False


def warm_up_sentence_reading() -> None:
    """Load the dictionary :func:`sentence_end` reads with now, not on a turn's pause."""
    _morphemes("はい")


def sentence_end(text: str) -> SentenceEnd | None:
    """How the Japanese ``text`` ends: ``complete`` (a predicate's final form, a
    sentence-final particle; before a question mark too), ``open`` (a case, binding,
    adverbial or conjunctive particle, a conjunctive or attributive form, a filler,
    「、」 but after a question word: 今何時、), or None when the words cannot tell (a noun,
    no Japanese, nothing)."""
    text = text.strip().rstrip(IGNORED_MARKS)
    asked = text.rstrip(IGNORED_MARKS + "".join(COMPLETE_MARKS))
    if not text or not asked:
        return None
    if text[-1] in "、,，":
        # Whisper ends a short question with 「、」 too (「今何時？」 heard as 「今何時、」):
        # after a question word the mark tells nothing, and the voice decides
        bare = text.rstrip("、,，" + IGNORED_MARKS)
        return None if bare and _ends_in_question_word(_morphemes(bare) or []) else "open"
    words = _morphemes(asked)
    if not words:
        return None
    if asked != text:   # Whisper ends fragments with ？ too: the words must agree
        end = _words_end(words)
        return end if end == "complete" else None
    return _words_end(words)


def _words_end(words: list[Any]) -> SentenceEnd | None:
    """How the last of Sudachi's ``words`` ends a sentence."""
    pos = words[-1].part_of_speech()
    if _request_form(words):
        return "request"
    if pos[0] == "助詞":
        if pos[1] == "終助詞":
            return "complete"
        return "open" if pos[1] in OPEN_PARTICLES else None
    if pos[0] == "感動詞" and pos[1] == "フィラー":
        return "open"
    if pos[0] in PREDICATES or pos[0] == "形状詞":
        form = pos[5]
        if form.startswith(("終止形", "命令形")):
            return "complete"
        if form.startswith(("連用形", "連体形", "仮定形", "未然形")):
            return "open"
    return None
