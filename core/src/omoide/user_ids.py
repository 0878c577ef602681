"""What a user id may be: one rule for the HTTP API, the CLI, devices and the stores.

A user id names a person whose memories omoide keeps. It ends up in URLs, log
lines, file names of exports and store payloads, so it is restricted to:

- 1 to 64 characters;
- letters and digits of any script (``alice``, ``はなこ``, ``user42``) and ``_ - . @``;
- not starting with ``.`` or ``-`` (no hidden files, no option-looking ids);
- already in Unicode NFKC form, so that two spellings of one id (full-width
  ``ａｌｉｃｅ`` and ``alice``) can never name two different people.

Anything else (``../../etc``, NUL, ANSI escapes, spaces, slashes) is refused with
:class:`InvalidUserId`, which says what the rule is.
"""

from __future__ import annotations

import unicodedata

from omoide.errors import InvalidInput

MAX_USER_ID_LENGTH = 64
_PUNCTUATION = frozenset("_-.@")
USER_ID_RULE = ("1-64 letters or digits (any script) and _ - . @, not starting with"
                " '.' or '-'")


class InvalidUserId(InvalidInput):
    """A user id that breaks :data:`USER_ID_RULE`."""


def _allowed(ch: str) -> bool:
    return ch in _PUNCTUATION or (ch.isalnum() and unicodedata.category(ch)[0] in "LN")


def validate_user_id(value: object) -> str:
    """Return ``value`` if it is a valid user id; raise :class:`InvalidUserId` otherwise.

    The message quotes the id with ``repr`` (control characters stay visible and never
    reach a terminal raw) and names the rule.
    """
    if not isinstance(value, str):
        raise InvalidUserId(f"user id must be a string, not {type(value).__name__}")
    shown = repr(value[:80])
    if not value or len(value) > MAX_USER_ID_LENGTH:
        raise InvalidUserId(f"user id {shown} must be {USER_ID_RULE}")
    if unicodedata.normalize("NFKC", value) != value:
        raise InvalidUserId(
            f"user id {shown} is not in NFKC form; use"
            f" {unicodedata.normalize('NFKC', value)!r}")
    if value[0] in ".-" or not all(_allowed(c) for c in value):
        raise InvalidUserId(f"user id {shown} must be {USER_ID_RULE}")
    return value


def is_valid_user_id(value: object) -> bool:
    """True when :func:`validate_user_id` would accept ``value``."""
    try:
        validate_user_id(value)
    except InvalidUserId:
        return False
    return True
