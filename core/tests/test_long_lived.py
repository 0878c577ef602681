"""Long-lived objects are kept out of the garbage collector's full collections, and that
never keeps garbage alive that reference counting would free."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from omoide import long_lived
from omoide.memory.index.person_index import UserIndex
from omoide.types import Memory

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    """Each test starts and ends with nothing frozen (the rest of the suite expects it)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class Kept:
    """A container the collector tracks."""


def test_settle_keeps_the_objects_that_exist_out_of_later_collections() -> None:
    kept = Kept()
    assert gc.is_tracked(kept)
    long_lived.settle("a test")
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # only the permanent generation


def test_settle_collects_the_young_cycles_first() -> None:
    cycle = Kept()
    cycle.me = cycle  # type: ignore[attr-defined]
    gone = weakref.ref(cycle)
    del cycle
    long_lived.settle("a test")
    assert gone() is None


def test_an_index_dropped_after_a_settle_is_still_freed() -> None:
    idx = UserIndex("me", "Asia/Tokyo")
    idx.add(Memory("m1", "me", "あなたは毎週水曜にギターの練習をしている。", NOW))
    idx.add(Memory("m2", "me", "あなたの妹の遥は10月に箱根に行く予定だ。", NOW))
    long_lived.settle("a test")
    gone = weakref.ref(idx)
    del idx
    assert gone() is None  # reference counting alone frees it: the index has no cycles
