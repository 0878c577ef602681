"""Text canonicalisation shared by the write and read paths.

Both sides go through :func:`canonical` (NFKC, one space for any whitespace run), so
"？" and "?" are the same character before anything compares them. Queries also
get :func:`query_copy`, which strips what carries no meaning for recall: leading
fillers (えーと, あのさ) and trailing punctuation and sentence-final fillers.
"""

from __future__ import annotations

import re
import unicodedata

_WS = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s?!.。、,，…~〜ー・!?]+$")
_LEADING_FILLERS = re.compile(
    r"^(?:(?:えー?と|えっと|ええと|あのさ|あのね|あのう|あの(?=[、,\s])|ねえ|ねぇ|ねー|うーん|"
    r"そういえば|ところで|えー|(?:ね|な|あ|ま|うん|まあ|ほら)(?=[、,\sー]))[ー、,\s]*)+")
_TRAILING_FILLERS = re.compile(r"(?:ねえ|ねー|なあ|かな|よね|ね|な|よ|さ)$")
_PUNCT_ANY = re.compile(r"[?!。、,.…]")


def canonical(text: str) -> str:
    """NFKC, whitespace collapsed and trimmed. Used for memories and queries alike."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def query_copy(text: str) -> str:
    """The query as recall should see it: canonical, fillers and trailing marks stripped.

    The result is what is embedded and analysed; it never becomes empty unless the
    input was only punctuation and fillers.
    """
    out = canonical(text)
    for _ in range(3):
        before = out
        out = _TRAILING.sub("", out)
        out = _LEADING_FILLERS.sub("", out).strip()
        stripped = _TRAILING_FILLERS.sub("", out)
        if len(stripped) >= 2:
            out = stripped
        if out == before:
            break
    out = _PUNCT_ANY.sub(" ", out)
    return _WS.sub(" ", out).strip()


def dedup_key(text: str) -> str:
    """Exact-duplicate key: canonical text without spaces and sentence punctuation."""
    return re.sub(r"[\s。、,.!?]", "", canonical(text)).lower()


_HIRA_START, _HIRA_END = 0x3041, 0x3096


_TO_KATAKANA = {c: c + 0x60 for c in range(_HIRA_START, _HIRA_END + 1)}


def to_katakana(text: str) -> str:
    """Hiragana -> katakana (other characters unchanged)."""
    return text.translate(_TO_KATAKANA)
