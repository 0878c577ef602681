"""The notes a robust read leaves (traces, ``/v1/turns``, ``omoide eval --misses``): only
what the read set, always in the same order whatever step set it."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from omoide.memory.recall.robust import ReadExplanation, prepare

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))   # a Sunday


def test_a_read_starts_with_the_query_its_intent_and_its_date_ranges() -> None:
    why = ReadExplanation.of(prepare("週末の予定覚えてる?", NOW))
    details = why.as_details()
    assert list(details) == ["query", "recall_intent", "intent", "date_ranges"]
    assert details["recall_intent"] is True
    # on a Sunday, 週末 is today and the next weekend
    assert details["date_ranges"] == [("2026-09-27", "2026-09-27", "週末"),
                                      ("2026-10-03", "2026-10-04", "週末")]


def test_a_refused_read_adds_only_the_gate() -> None:
    why = ReadExplanation.of(prepare("電気を消して", NOW))
    why.gate = "a command"
    assert list(why.as_details())[4:] == ["gate"]


def test_dense_scores_from_the_store_are_noted_before_the_gate_and_from_the_index_after() -> None:
    why = ReadExplanation("q", True, [], [], gate="shared words", dense_source="store",
                          heard=["セミ"], dense_margin=0.1, dense_spread=0.2)
    assert list(why.as_details())[4:] == ["dense_source", "heard", "gate", "dense_margin",
                                          "dense_spread"]
    why.dense_source = "index"
    assert list(why.as_details())[4:] == ["heard", "gate", "dense_source", "dense_margin",
                                          "dense_spread"]


def test_what_a_read_never_set_is_left_out_but_an_empty_hearing_is_kept() -> None:
    why = ReadExplanation("q", False, [], [], gate="about: no evidence", heard=[])
    assert why.as_details() == {"query": "q", "recall_intent": False, "intent": [],
                                "date_ranges": [], "heard": [], "gate": "about: no evidence"}


def test_the_words_each_memory_shares_come_last() -> None:
    why = ReadExplanation("q", True, [], [], gate="shared words", in_profile=1,
                          weekend_fallback="2026-10-03", shared_words_ignored="x",
                          matched={"m2": ["箱根"], "m1": ["旅行"]})
    details = why.as_details()
    assert list(details)[4:] == ["weekend_fallback", "shared_words_ignored", "gate",
                                 "in_profile", "matched"]
    assert list(details["matched"]) == ["m2", "m1"]
