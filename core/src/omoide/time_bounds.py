"""The range of dates and times omoide accepts from clients.

A client-supplied time (a turn's ``now``, an imported memory's ``created_at``, its
``event_dates``) is later shifted by days, weeks and years (来年, 来週の土曜日) and
converted between time zones; ``9999-12-31`` overflows that arithmetic deep inside
extraction, long after the request was accepted. So every such value is checked at
the boundary against a range that leaves room for the arithmetic:

- a moment (when something was said): 1970-01-02 .. 2199-12-31;
- a date (what a memory is about, a birthday in 1930 included): 1900-01-01 .. 2199-12-31.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated

from pydantic import AfterValidator

EARLIEST_MOMENT = datetime(1970, 1, 2, tzinfo=UTC)
LATEST_MOMENT = datetime(2199, 12, 31, tzinfo=UTC)
EARLIEST_DATE = date(1900, 1, 1)
LATEST_DATE = date(2199, 12, 31)


def check_moment(value: datetime) -> datetime:
    """Return ``value`` if it lies in the accepted range; raise ``ValueError`` otherwise.

    A naive value is compared as if it were UTC (a few hours make no difference here).
    """
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not EARLIEST_MOMENT <= aware <= LATEST_MOMENT:
        raise ValueError(f"{value.isoformat()} is outside the accepted range "
                         f"{EARLIEST_MOMENT:%Y-%m-%d} .. {LATEST_MOMENT:%Y-%m-%d}")
    return value


def check_date(value: date) -> date:
    """Return ``value`` if it lies in the accepted range; raise ``ValueError`` otherwise."""
    if not EARLIEST_DATE <= value <= LATEST_DATE:
        raise ValueError(f"{value.isoformat()} is outside the accepted range "
                         f"{EARLIEST_DATE:%Y-%m-%d} .. {LATEST_DATE:%Y-%m-%d}")
    return value


SaneDatetime = Annotated[datetime, AfterValidator(check_moment)]
"""A pydantic field type: a datetime within the accepted range (422 otherwise)."""

SaneDate = Annotated[date, AfterValidator(check_date)]
"""A pydantic field type: a date within the accepted range."""
