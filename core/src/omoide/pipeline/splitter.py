"""Cuts a streamed reply into sentences for TTS, as soon as each one is complete.

Sentences end at 。！？ and ASCII ?! (with any run of them and trailing closing
brackets/quotes), at … runs followed by a space, and at newlines. Optionally the
*first* sentence is cut at a comma (、，,) once it is long enough, so the first
audio starts sooner.

A sentence whose terminator is the last character received is released at once
rather than held for the next piece (that wait would add a token's latency to every
sentence); terminators or closing brackets that then arrive at the head of the next
piece belong to the sentence already released and are not spoken again.
"""

from __future__ import annotations

TERMINATORS = set("。！？!?")
CLOSERS = set("」』）)】〕\"'”’")
COMMAS = set("、，,")


class SentenceSplitter:
    def __init__(self, *, first_sentence_comma_split: bool = False,
                 min_first_chars: int = 6, max_chars: int = 120) -> None:
        self._buf = ""
        self._skip_orphans = False
        self._first_pending = first_sentence_comma_split
        self._min_first = min_first_chars
        self._max_chars = max_chars

    def feed(self, text: str) -> list[str]:
        """Add streamed text; return the sentences it completed (possibly none)."""
        self._buf += text
        if self._skip_orphans:
            head = self._buf.lstrip()
            rest = head.lstrip("".join(TERMINATORS | CLOSERS))
            if rest:
                self._skip_orphans = False
            self._buf = rest
        out: list[str] = []
        while True:
            cut = self._find_cut()
            if cut is None:
                break
            sentence, self._buf = self._buf[:cut].strip(), self._buf[cut:]
            if sentence:
                out.append(sentence)
                self._first_pending = False
        return out

    def flush(self) -> list[str]:
        """End of stream: whatever is left is the last sentence."""
        rest, self._buf = self._buf.strip(), ""
        if self._skip_orphans:
            rest = rest.lstrip("".join(TERMINATORS | CLOSERS))
        return [rest] if rest else []

    def _find_cut(self) -> int | None:
        buf = self._buf
        for i, ch in enumerate(buf):
            if ch == "\n":
                return i + 1
            if ch in TERMINATORS or (ch == "…" or ch == "‥"):
                j = i + 1
                while j < len(buf) and (buf[j] in TERMINATORS or buf[j] in CLOSERS
                                        or buf[j] in "…‥"):
                    j += 1
                if j == len(buf):
                    if ch in "…‥":
                        return None  # an ellipsis may go on inside the sentence
                    self._skip_orphans = True
                    return j
                if ch in "…‥" and buf[j] not in " 　\n" and not _has_terminator(buf[i:j]):
                    continue  # an ellipsis inside a sentence
                if ch in "!?" and buf[j].isascii() and buf[j].isalnum():
                    continue  # "3.5!x" or "Yahoo!Japan": not an ending
                return j
            if ch in COMMAS and self._first_pending and i + 1 >= self._min_first:
                return i + 1
            if i + 1 >= self._max_chars and ch in COMMAS:
                return i + 1
        return None


def _has_terminator(s: str) -> bool:
    return any(c in TERMINATORS for c in s)


def split_sentences(text: str, *, first_sentence_comma_split: bool = False) -> list[str]:
    """Split a whole text at once (same rules as streaming)."""
    splitter = SentenceSplitter(first_sentence_comma_split=first_sentence_comma_split)
    return splitter.feed(text) + splitter.flush()
