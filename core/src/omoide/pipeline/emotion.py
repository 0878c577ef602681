"""The emotion tag at the head of a reply: parsed off, never spoken.

The chat model is asked to start every reply with one tag such as ``[happy]``. We
also accept full-width brackets (【happy】), angle brackets, and a leading emoji
(the convention of xiaozhi-style servers). Text without a tag gets ``neutral``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from omoide.types import Emotion

EMOJI_EMOTIONS: dict[str, Emotion] = {
    "😂": Emotion.LAUGHING, "😭": Emotion.CRYING, "😠": Emotion.ANGRY, "😔": Emotion.SAD,
    "😍": Emotion.LOVING, "😲": Emotion.SURPRISED, "😱": Emotion.SURPRISED,
    "🤔": Emotion.THINKING, "😌": Emotion.RELAXED, "😴": Emotion.SLEEPY, "😜": Emotion.LAUGHING,
    "🙄": Emotion.DOUBTFUL, "😶": Emotion.NEUTRAL, "🙂": Emotion.HAPPY, "😆": Emotion.LAUGHING,
    "😳": Emotion.EMBARRASSED, "😉": Emotion.HAPPY, "😎": Emotion.HAPPY, "🤤": Emotion.HAPPY,
    "😘": Emotion.LOVING, "😏": Emotion.HAPPY, "😊": Emotion.HAPPY, "😄": Emotion.HAPPY,
    "😢": Emotion.SAD, "😡": Emotion.ANGRY,
}

ALIASES: dict[str, Emotion] = {
    "joy": Emotion.HAPPY, "glad": Emotion.HAPPY, "fun": Emotion.LAUGHING,
    "funny": Emotion.LAUGHING, "confused": Emotion.DOUBTFUL, "doubt": Emotion.DOUBTFUL,
    "love": Emotion.LOVING, "surprise": Emotion.SURPRISED, "shocked": Emotion.SURPRISED,
    "tired": Emotion.SLEEPY, "relax": Emotion.RELAXED, "cry": Emotion.CRYING,
    "喜び": Emotion.HAPPY, "嬉しい": Emotion.HAPPY, "笑い": Emotion.LAUGHING,
    "怒り": Emotion.ANGRY, "悲しい": Emotion.SAD, "悲しみ": Emotion.SAD, "泣く": Emotion.CRYING,
    "眠い": Emotion.SLEEPY, "疑問": Emotion.DOUBTFUL, "驚き": Emotion.SURPRISED,
    "普通": Emotion.NEUTRAL, "通常": Emotion.NEUTRAL,
}

_TAG = re.compile(r"^\s*(?:\[([^\[\]\n]{1,20})\]|【([^【】\n]{1,20})】|<([A-Za-z_]{1,20})>)\s*")
_OPENERS = ("[", "【", "<")
MAX_TAG_CHARS = 24


@dataclass(frozen=True)
class Tagged:
    emotion: Emotion
    text: str
    had_tag: bool


def _lookup(word: str) -> Emotion | None:
    word = word.strip().lower()
    try:
        return Emotion(word)
    except ValueError:
        return ALIASES.get(word)


def parse_emotion(text: str) -> Tagged:
    """Split a complete reply into its emotion and the text to speak."""
    m = _TAG.match(text)
    if m:
        word = next(g for g in m.groups() if g is not None)
        emotion = _lookup(word)
        if emotion is not None:
            return Tagged(emotion, text[m.end():], True)
    stripped = text.lstrip()
    for emoji, emotion in EMOJI_EMOTIONS.items():
        if stripped.startswith(emoji):
            return Tagged(emotion, stripped[len(emoji):].lstrip("\ufe0f").lstrip(), True)
    return Tagged(Emotion.NEUTRAL, text, False)


class StreamingEmotionParser:
    """Holds back the head of a streamed reply until its tag (if any) is complete.

    ``feed`` returns ``None`` while undecided, then the decided :class:`Tagged`
    (once) with the text so far; afterwards text passes through via ``feed``'s
    return value of a Tagged whose ``text`` is only the new piece.
    """

    def __init__(self) -> None:
        self._head = ""
        self.decided: Tagged | None = None

    def feed(self, piece: str) -> Tagged | None:
        if self.decided is not None:
            return Tagged(self.decided.emotion, piece, self.decided.had_tag)
        self._head += piece
        head = self._head.lstrip()
        if not head:
            return None
        closed = any(c in head for c in ("]", "】", ">"))
        if head.startswith(_OPENERS) and not closed and len(head) < MAX_TAG_CHARS:
            return None
        self.decided = parse_emotion(self._head)
        return self.decided

    def finish(self) -> Tagged:
        """Call at the end of the stream: decides whatever is held back."""
        if self.decided is None:
            self.decided = parse_emotion(self._head)
            return self.decided
        return Tagged(self.decided.emotion, "", self.decided.had_tag)
