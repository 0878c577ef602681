"""The one rule for control characters in the text omoide keeps (memories, profile facts,
what a person said, search texts).

A control character is any of Unicode's ``Cc`` (NUL, ESC, DEL, C1 controls such as
NEL), ``Cf`` (format characters: bidirectional overrides, zero-width spaces, the BOM,
tag characters) or the line and paragraph separators (``Zl``, ``Zp``), except the
zero-width joiner and non-joiner (``Cf``, but part of emoji and of ordinary writing).
Where a text may span lines (what a person typed), ``\\n`` and ``\\t`` are allowed;
memory texts are one line and allow neither.

Where the text comes from a caller (an import, an HTTP route, the CLI), it is refused
with :func:`check_no_controls` (a ``ValueError`` naming the character and its position,
which pydantic reports as a validation problem); where it comes from a recogniser or a
model, the characters are removed with :func:`strip_controls` (whitespace-like ones
become a space), since nobody could fix the input.
"""

from __future__ import annotations

import re
import unicodedata

_JOINERS = frozenset("\u200c\u200d")
_LINE_BREAKS = frozenset("\n\t")
_CONTROL_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp"))
# Controls that separate words: removed as a space, not glued together.
_SPACING = re.compile(r"[\t\n\r\x0b\x0c\x1c-\x1f\x85\u2028\u2029]")


def is_control(ch: str, *, line_breaks: bool = False) -> bool:
    """Whether ``ch`` is a control character under the rule (``line_breaks``: ``\\n`` and
    ``\\t`` are allowed)."""
    if line_breaks and ch in _LINE_BREAKS:
        return False
    if ch in _JOINERS:
        return False
    return unicodedata.category(ch) in _CONTROL_CATEGORIES


def find_controls(text: str, *, line_breaks: bool = False) -> list[tuple[int, str]]:
    """Each control character of ``text`` with its position (0-based)."""
    return [(i, ch) for i, ch in enumerate(text) if is_control(ch, line_breaks=line_breaks)]


_SHORT_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0A: "LF", 0x0B: "VT",
                0x0C: "FF", 0x0D: "CR", 0x1B: "ESC", 0x7F: "DEL", 0x85: "NEL"}


def _name(ch: str) -> str:
    name = _SHORT_NAMES.get(ord(ch)) or unicodedata.name(ch, "")
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def check_no_controls(text: str, *, line_breaks: bool = False) -> str:
    """``text`` unchanged, or ``ValueError`` naming the first control character
    (``"must not contain control characters (U+001B at character 3)"``)."""
    found = find_controls(text, line_breaks=line_breaks)
    if found:
        at, ch = found[0]
        more = f", and {len(found) - 1} more" if len(found) > 1 else ""
        raise ValueError(f"must not contain control characters ({_name(ch)} at character"
                         f" {at + 1}{more})")
    return text


def check_no_controls_multiline(text: str) -> str:
    """:func:`check_no_controls` allowing ``\\n`` and ``\\t`` (for pydantic validators)."""
    return check_no_controls(text, line_breaks=True)


def strip_controls(text: str, *, line_breaks: bool = False) -> str:
    """``text`` without control characters: those that separate words (tab, line and
    paragraph breaks, the C0 separators, NEL) become a space unless ``line_breaks``
    keeps ``\\n`` and ``\\t``; the others are removed."""
    if not find_controls(text, line_breaks=line_breaks):
        return text
    out = []
    for ch in text:
        if not is_control(ch, line_breaks=line_breaks):
            out.append(ch)
        elif _SPACING.fullmatch(ch):
            out.append(" ")
    return "".join(out)
