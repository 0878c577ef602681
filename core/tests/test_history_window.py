"""Short-term history: last 3 exchanges, only within 10 minutes of the last utterance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from omoide.pipeline.history import ConversationHistory
from omoide.types import Exchange

T0 = datetime(2026, 9, 27, 12, 0, tzinfo=UTC)


def _ex(i: int, user: str = "u1", minutes: float = 0) -> Exchange:
    return Exchange(f"e{i}", user, f"q{i}", f"a{i}", T0 + timedelta(minutes=minutes))


def test_keeps_only_the_last_three_exchanges() -> None:
    history = ConversationHistory(3, timedelta(minutes=10))
    for i in range(5):
        history.add(_ex(i, minutes=i))
    assert [e.id for e in history.recent("u1", T0 + timedelta(minutes=5))] == ["e2", "e3", "e4"]


def test_history_is_dropped_after_ten_minutes_of_silence() -> None:
    history = ConversationHistory(3, timedelta(minutes=10))
    history.add(_ex(0))
    assert history.recent("u1", T0 + timedelta(minutes=9, seconds=59))
    assert history.recent("u1", T0 + timedelta(minutes=10)) == []


def test_the_window_counts_from_the_last_utterance_not_the_first() -> None:
    history = ConversationHistory(3, timedelta(minutes=10))
    history.add(_ex(0, minutes=0))
    history.add(_ex(1, minutes=8))
    assert len(history.recent("u1", T0 + timedelta(minutes=17))) == 2


def test_users_have_separate_histories() -> None:
    history = ConversationHistory(3, timedelta(minutes=10))
    history.add(_ex(0, user="alice"))
    assert history.recent("bob", T0) == []
    assert len(history.recent("alice", T0)) == 1


def test_zero_exchanges_disables_history() -> None:
    history = ConversationHistory(0, timedelta(minutes=10))
    history.add(_ex(0))
    assert history.recent("u1", T0) == []
