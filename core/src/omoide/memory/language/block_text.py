"""Text people said, made safe to place inside a tagged block of a prompt
(``<retrieved_memory>`` for the chat model, ``<conversation>`` for extraction).

The text is data, never markup. :func:`escape_block_text` makes sure it can neither end
the block nor start a line of its own:

- every line or paragraph separator and control character (``\n \r \x0b \x0c
  \x1c-\x1e \x85 \u2028 \u2029``, ANSI escapes, NUL...) becomes a space, and
  invisible format characters (zero-width spaces, bidi overrides) are dropped, so the
  text is always exactly one line;
- every character that is an angle bracket in any width or form (``< ＜ ﹤``, and the
  look-alikes ``‹ 〈 ⟨ ˂ ᐸ ❮ 《 «`` with their closing partners) becomes a full-width
  parenthesis, so no tag can be opened or closed;
- the block's own tag name in any spelling (``ｒｅｔｒｉｅｖｅｄ＿ｍｅｍｏｒｙ``,
  ``Ｃｏｎｖｅｒｓａｔｉｏｎ``, with zero-width or combining characters inside) is
  replaced, so no text can even name the tag.

Detection sees each character's NFKC form; the rest of the text keeps its own
characters (a full-width 「（2026年10月3日）」 stays full-width).
"""

from __future__ import annotations

import re
import unicodedata

_OPENING = "‹〈〈⟨˂ᐸ❮⧼❬❰⟪《«"
_CLOSING = "›〉〉⟩˃ᐳ❯⧽❭❱⟫》»"
_SPACES = re.compile(r" {2,}")


def _neutral(ch: str) -> str:
    """What one character becomes in the block."""
    category = unicodedata.category(ch)
    if category in ("Cc", "Zl", "Zp"):   # controls (\x0b \x1c \x85 ESC NUL...), separators
        return " "
    if category == "Cf":                 # zero-width and bidi formatting characters
        return ""
    folded = unicodedata.normalize("NFKC", ch)
    if "<" in folded or ch in _OPENING:
        return "（"
    if ">" in folded or ch in _CLOSING:
        return "）"
    return ch


def _replace_tag_names(text: str, tag: re.Pattern[str], replacement: str) -> str:
    """Replace ``tag`` (a pattern over NFKC, case-folded text), matched on each
    character's folded form."""
    folded: list[str] = []
    owner: list[int] = []
    for i, ch in enumerate(text):
        for f in unicodedata.normalize("NFKC", ch).casefold():
            if unicodedata.category(f) != "Mn":   # combining marks hide nothing
                folded.append(f)
                owner.append(i)
    out: list[str] = []
    last = 0
    for match in tag.finditer("".join(folded)):
        start, end = owner[match.start()], owner[match.end() - 1] + 1
        out += [text[last:start], replacement]
        last = end
    return "".join(out) + text[last:]


def escape_block_text(text: str, tag: re.Pattern[str], replacement: str) -> str:
    """``text`` as one line of a block whose tag name ``tag`` matches (lower case,
    NFKC): no line break, no angle bracket, the tag name replaced by ``replacement``."""
    text = "".join(_neutral(c) for c in text)
    text = _replace_tag_names(text, tag, replacement)
    return _SPACES.sub(" ", text).strip()


_TAG_NAME = re.compile(r"/?\s*retrieved[\s_\-‐‑‒–—―・.]*memory")


_PLAIN = re.compile(
    r"[\u3041-\u3096\u30a1-\u30fa\u30fc\u4e00-\u9fff0-9\uff10-\uff19"
    r"、。，．（）「」『』・！？〜～]*")
"""Kana, kanji, digits and Japanese punctuation only: no space, no control or format
character, no angle bracket, and nothing whose NFKC form is a letter to spell a tag name."""


def escape_memory_text(text: str) -> str:
    """Memory text made safe to place inside a memory block of the prompt (the
    ``<retrieved_memory>`` and ``<profile>`` blocks): one line, no tag, no markup."""
    if _PLAIN.fullmatch(text):
        # nothing to escape: most memories, and the profile of a year of them measures
        # tens of thousands of lines
        return text
    return escape_block_text(text, _TAG_NAME, "(メモ)")
