"""A recall starts dense recall from the store only when the recent ones say it ends
within the time it has left: under load such a search otherwise ends after its recall
gave up, finding nothing and delaying the searches behind it."""

from __future__ import annotations

import pytest

from omoide.memory.index import dense_path_timing as dense_paths
from omoide.memory.index.dense_path_timing import WINDOW_S, DensePathTimes


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The monotonic clock the paths are timed by: ``clock[0]`` is now (set it)."""
    now = [1000.0]
    monkeypatch.setattr(dense_paths.time, "monotonic", lambda: now[0])
    return now


def test_with_no_recent_path_any_fits(clock: list[float]) -> None:
    paths = DensePathTimes()
    assert paths.expected_s() == 0.0 and paths.fits(0.0)


def test_the_median_of_the_recent_paths_is_what_the_next_is_expected_to_take(
        clock: list[float]) -> None:
    paths = DensePathTimes()
    for seconds in (0.02, 0.15, 0.12, 0.30, 0.01):
        paths.record(seconds)
    assert paths.expected_s() == 0.12
    assert paths.fits(0.2) and not paths.fits(0.1)


def test_paths_older_than_the_window_no_longer_count(clock: list[float]) -> None:
    paths = DensePathTimes()
    for _ in range(3):
        paths.record(0.25)  # under load a while ago ...
    clock[0] += WINDOW_S + 0.1
    paths.record(0.02)
    paths.record(0.03)
    assert paths.expected_s() == 0.03
    clock[0] += WINDOW_S + 0.1  # ... and nothing since: the next paths measure it again
    assert paths.expected_s() == 0.0
