"""Emotion tags in a reply: the head tag sets the face, every tag is removed from speech.

The chat model is asked to start every reply with one tag such as ``[happy]``. We
also accept full-width brackets (【happy】), angle brackets, and a leading emoji
(the convention of xiaozhi-style servers). Text without a tag gets ``neutral``.

The reference's chat model wrote its own tags (``joy``, ``fun``, ``smile``... see
:data:`REFERENCE_TAGS`); they are recognised like omoide's. A tag nobody knows
(``[wink]``, ``<blush>``) still never reaches the speaker: a head tag of that shape
is dropped and the face stays ``neutral``, and tags later in the reply are removed
wherever they appear, even when a stream splits them across pieces.
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

REFERENCE_TAGS: dict[str, Emotion] = {
    "joy": Emotion.HAPPY, "fun": Emotion.LAUGHING, "smile": Emotion.HAPPY,
    "angry": Emotion.ANGRY, "sorrow": Emotion.SAD,
}
"""The tags the reference's chat model put at the head of its replies. Its article names
``joy``, ``fun`` and ``smile`` out of five; ``angry`` and ``sorrow`` complete the
expression set those names come from (the VRM presets joy/angry/sorrow/fun)."""

ALIASES: dict[str, Emotion] = {
    **REFERENCE_TAGS,
    "glad": Emotion.HAPPY, "funny": Emotion.LAUGHING, "confused": Emotion.DOUBTFUL,
    "doubt": Emotion.DOUBTFUL, "love": Emotion.LOVING, "surprise": Emotion.SURPRISED,
    "shocked": Emotion.SURPRISED, "tired": Emotion.SLEEPY, "relax": Emotion.RELAXED,
    "cry": Emotion.CRYING, "smiling": Emotion.HAPPY, "laugh": Emotion.LAUGHING,
    "anger": Emotion.ANGRY, "sadness": Emotion.SAD, "sleep": Emotion.SLEEPY,
    "喜び": Emotion.HAPPY, "嬉しい": Emotion.HAPPY, "笑い": Emotion.LAUGHING,
    "笑顔": Emotion.HAPPY, "怒り": Emotion.ANGRY, "悲しい": Emotion.SAD, "悲しみ": Emotion.SAD,
    "泣く": Emotion.CRYING, "眠い": Emotion.SLEEPY, "疑問": Emotion.DOUBTFUL,
    "驚き": Emotion.SURPRISED, "普通": Emotion.NEUTRAL, "通常": Emotion.NEUTRAL,
}

MAX_TAG_CHARS = 24
"""A bracket left open longer than this is text, not a tag (streams stop holding it)."""

# A tag is a short word in brackets: [smile], [very happy], <sad>, 【喜び】.
_WORD = r"[^\[\]【】<>\n]{1,20}"
_HEAD_TAG = re.compile(rf"^\s*(?:\[({_WORD})\]|【({_WORD})】|<([A-Za-z_ -]{{1,20}})>)\s*")
# Anywhere in the text: ASCII-looking [tags] and <tags>, and 【…】 only around a known
# emotion word (Japanese text uses 【】 for headings that are read aloud).
_ANY_TAG = re.compile(r"\[[A-Za-z_][A-Za-z0-9_ -]{0,19}\]|<[A-Za-z_][A-Za-z0-9_ -]{0,19}>"
                      r"|【([^【】\n]{1,20})】")
_OPENERS = ("[", "【", "<")
_CLOSERS = {"[": "]", "【": "】", "<": ">"}


@dataclass(frozen=True)
class Tagged:
    emotion: Emotion
    text: str
    had_tag: bool


def lookup_emotion(word: str) -> Emotion | None:
    """The emotion a tag word names (omoide's names, the reference's, aliases), if any."""
    word = word.strip().lower()
    try:
        return Emotion(word)
    except ValueError:
        return ALIASES.get(word)


def strip_tags(text: str) -> str:
    """``text`` without emotion tags (``[smile]``, ``<sad>``, 【喜び】) anywhere in it."""
    def drop(m: re.Match[str]) -> str:
        inner = m.group(1)
        if inner is not None and lookup_emotion(inner) is None:
            return m.group(0)         # a 【heading】, not a tag
        return ""
    return _ANY_TAG.sub(drop, text)


def parse_emotion(text: str) -> Tagged:
    """Split a complete reply into its emotion and the text to speak (tags removed)."""
    m = _HEAD_TAG.match(text)
    if m:
        word = next(g for g in m.groups() if g is not None)
        emotion = lookup_emotion(word)
        if emotion is not None:
            return Tagged(emotion, strip_tags(text[m.end():]), True)
        if m.group(2) is None:        # an unknown [tag] or <tag>: never spoken
            return Tagged(Emotion.NEUTRAL, strip_tags(text[m.end():]), True)
    stripped = text.lstrip()
    for emoji, emotion in EMOJI_EMOTIONS.items():
        if stripped.startswith(emoji):
            rest = stripped[len(emoji):].lstrip("\ufe0f").lstrip()
            return Tagged(emotion, strip_tags(rest), True)
    return Tagged(Emotion.NEUTRAL, strip_tags(text), False)


class _TagFilter:
    """Removes tags from streamed text, holding back a bracket until it closes."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        start = max(text.rfind(o) for o in _OPENERS)
        if start >= 0 and _CLOSERS[text[start]] not in text[start:] \
                and len(text) - start < MAX_TAG_CHARS:
            text, self._held = text[:start], text[start:]
        return strip_tags(text)

    def finish(self) -> str:
        held, self._held = self._held, ""
        return strip_tags(held)


class StreamingEmotionParser:
    """Holds back the head of a streamed reply until its tag (if any) is complete.

    ``feed`` returns ``None`` while undecided, then the decided :class:`Tagged`
    (once) with the text so far; afterwards each ``feed`` returns a Tagged whose
    ``text`` is only the new piece, minus tags (an unclosed bracket is held back until
    it closes or grows too long for a tag, so its text may come with a later piece).
    """

    def __init__(self) -> None:
        self._head = ""
        self._filter = _TagFilter()
        self.decided: Tagged | None = None

    def feed(self, piece: str) -> Tagged | None:
        if self.decided is not None:
            return Tagged(self.decided.emotion, self._filter.feed(piece), self.decided.had_tag)
        self._head += piece
        head = self._head.lstrip()
        if not head:
            return None
        closed = any(c in head for c in ("]", "】", ">"))
        if head.startswith(_OPENERS) and not closed and len(head) < MAX_TAG_CHARS:
            return None
        self.decided = self._decide(self._head)
        return self.decided

    def _decide(self, head: str) -> Tagged:
        tagged = parse_emotion(head)
        # The head's text goes through the filter too, so a tag begun at its very end
        # is held back like any other.
        return Tagged(tagged.emotion, self._filter.feed(self._raw_rest(head, tagged)),
                      tagged.had_tag)

    @staticmethod
    def _raw_rest(head: str, tagged: Tagged) -> str:
        """The head minus its leading tag or emoji, before tags inside it are removed."""
        if not tagged.had_tag:
            return head
        m = _HEAD_TAG.match(head)
        if m:
            return head[m.end():]
        stripped = head.lstrip()
        for emoji in EMOJI_EMOTIONS:
            if stripped.startswith(emoji):
                return stripped[len(emoji):].lstrip("\ufe0f").lstrip()
        return head

    def finish(self) -> Tagged:
        """Call at the end of the stream: decides whatever is held back."""
        if self.decided is None:
            self.decided = self._decide(self._head)
            return Tagged(self.decided.emotion, self.decided.text + self._filter.finish(),
                          self.decided.had_tag)
        return Tagged(self.decided.emotion, self._filter.finish(), self.decided.had_tag)
