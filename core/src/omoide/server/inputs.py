"""Field types for what HTTP clients send: checked at the boundary, 422 when wrong.

Use them in route signatures and request models so nothing downstream ever sees a
malformed user id, a blank text or a date that overflows later arithmetic::

    async def route(user: UserId, q: QueryText | None = None): ...
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StrictStr

from omoide.text_controls import check_no_controls, check_no_controls_multiline
from omoide.user_ids import InvalidUserId, validate_user_id


def _user_id(value: str) -> str:
    try:
        return validate_user_id(value)
    except InvalidUserId as exc:  # pydantic reports ValueError as a validation problem
        raise ValueError(str(exc)) from None


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


UserId = Annotated[str, AfterValidator(_user_id)]
"""A user id following :data:`omoide.user_ids.USER_ID_RULE`."""

TurnText = Annotated[StrictStr, Field(min_length=1, max_length=4000),
                     AfterValidator(_not_blank), AfterValidator(check_no_controls_multiline)]
"""What a user said: a string (never null, never a number), not blank, at most 4000
characters, no control characters but line breaks and tabs (:mod:`omoide.text_controls`)."""

QueryText = Annotated[StrictStr, Field(min_length=1, max_length=1000),
                      AfterValidator(_not_blank), AfterValidator(check_no_controls)]
"""A search text (one line, no control characters)."""

MemoryText = Annotated[StrictStr, Field(min_length=1, max_length=200),
                       AfterValidator(_not_blank), AfterValidator(check_no_controls)]
"""A memory's or profile fact's text as a caller sends it (one line, no control
characters)."""

MemoryId = Annotated[StrictStr, Field(min_length=1, max_length=200,
                                      pattern=r"^[^\x00-\x1f\x7f]+$")]
"""A memory id as the store gave it (no control characters)."""
