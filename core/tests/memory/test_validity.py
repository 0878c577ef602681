"""Facts that change: the current version wins at recall, the old one answers only
questions about before; different people and different things never replace each other."""

from __future__ import annotations

from datetime import datetime

from omoide.memory.facts.validity import changes_in, lasts, same_subject, slot_key
from omoide.memory.index.person_index import UserIndex
from omoide.memory.recall.robust.currency import (
    asks_about_before,
    current_versions,
    earlier_versions,
)
from omoide.memory.recall.robust.query import prepare
from omoide.types import Memory

NOW = datetime.fromisoformat("2027-09-28T21:00:00+09:00")


def _index(memories: dict[str, tuple[str, str]]) -> UserIndex:
    index = UserIndex("u", "Asia/Tokyo")
    for mid, (day, text) in memories.items():
        index.add(Memory(id=mid, user="u", text=text,
                         created_at=datetime.fromisoformat(day + "T20:00:00+09:00")))
    return index


def _recalled(index: UserIndex, query: str, candidates: set[str]) -> set[str]:
    chosen, _, _ = current_versions(index, prepare(query, NOW), candidates,
                                    dict.fromkeys(candidates, 1.0))
    return chosen


HOMES = {"sapporo": ("2026-11-02", "あなたは札幌の円山のアパートで一人暮らしをしている。"),
         "sendai": ("2027-06-10", "あなたは今日、仙台の青葉区のマンションに引っ越した。")}


def test_a_newer_memory_in_the_same_slot_wins() -> None:
    index = _index(HOMES)
    assert index.validity()["sapporo"].superseded_by == "sendai"
    assert "sendai" not in index.validity()
    assert _recalled(index, "いまどこに住んでるんだっけ", {"sapporo"}) == {"sendai"}
    assert [m.id for m in index.versions("sapporo")] == ["sapporo", "sendai"]


def test_the_older_one_answers_questions_about_before() -> None:
    index = _index(HOMES)
    for query in ("前はどこに住んでたっけ", "昔住んでた町どこだっけ", "札幌にいた頃の家ってどこだっけ"):
        assert asks_about_before(prepare(query, NOW)), query
        assert _recalled(index, query, {"sapporo"}) == {"sapporo"}
    assert not asks_about_before(prepare("この前どこ行ったっけ", NOW))


JOBS = {"city": ("2026-10-03", "あなたは仙台市交通局で市営バスの運転手をしていて、"
                             "主に泉中央と仙台駅を結ぶ路線を走っている。"),
        "highway": ("2027-04-10", "あなたは4月から高速バス会社で運転手として働いていて、"
                                  "夜行便を担当している。")}


def test_an_occupation_held_is_a_job_and_a_new_one_replaces_it() -> None:
    assert slot_key(JOBS["city"][1]) == ((), "job")
    assert slot_key("あなたの母は看護師をしている。") == (("母",), "job")
    assert slot_key("あなたは名古屋でカフェを一人で営んでいる。") == ((), "job")
    assert slot_key("あなたは週末に子どもの相手をしている。") is None   # not an occupation
    assert slot_key("あなたは趣味でギターをしている。") is None
    assert _index(JOBS).validity()["city"].superseded_by == "highway"


def test_asked_about_before_the_memory_that_replaced_another_brings_it_in() -> None:
    """「前はどこで働いてたんだっけ」 shares 働い with the new job only: the old one it
    replaced is brought in, just above it."""
    index = _index(JOBS)
    q = prepare("前はどこで働いてたんだっけ", NOW)
    chosen, scores, brought = earlier_versions(index, q, {"highway"}, {"highway": 1.0})
    assert chosen == {"highway", "city"} and brought == {"city": "highway"}
    assert scores["city"] > scores["highway"]
    now = prepare("今どこで働いてるんだっけ", NOW)
    assert earlier_versions(index, now, {"highway"}, {"highway": 1.0})[0] == {"highway"}


def test_two_people_of_the_same_name_do_not_replace_each_other() -> None:
    index = _index({
        "colleague": ("2026-12-01", "あなたの同僚の佐藤さんは横浜に住んでいる。"),
        "landlord": ("2027-03-01", "あなたの大家の佐藤さんは川崎に住んでいる。")})
    assert index.validity() == {}
    assert not same_subject(("同僚", "佐藤"), ("大家", "佐藤"))
    assert same_subject(("息子", "颯太"), ("颯太",))


def test_two_subjects_do_not_replace_each_other() -> None:
    index = _index({
        "mine": ("2026-12-01", "あなたは名古屋の栄で一人暮らしをしている。"),
        "mother": ("2027-03-01", "あなたの母は静岡の実家で暮らしている。")})
    assert slot_key(HOMES["sapporo"][1]) == ((), "residence")
    assert slot_key("あなたの母は静岡の実家で暮らしている。") == (("母",), "residence")
    assert index.validity() == {}


def test_a_habit_given_up_is_replaced_but_a_past_event_is_not() -> None:
    index = _index({
        "habit": ("2026-10-05", "あなたは毎朝、川沿いを5キロほどサイクリングしている。"),
        "fall": ("2027-01-20", "あなたはサイクリング中に転んで膝を擦りむいた。"),
        "quit": ("2027-05-02", "あなたは膝を痛めてからサイクリングをやめて、ヨガ教室に通っている。")})
    assert index.validity()["habit"].superseded_by == "quit"
    assert "fall" not in index.validity()
    assert _recalled(index, "最近って朝サイクリングしてるんだっけ", {"habit"}) == {"quit"}


def test_a_plan_moved_to_another_date_the_new_date_wins() -> None:
    index = _index({
        "plan": ("2027-08-30", "あなたは10月3日（2027年10月3日）に友人と箱根へ行く予定だ。"),
        "moved": ("2027-09-20", "あなたは友人の都合で、箱根旅行を10月17日（2027年10月17日）に延期した。")})
    assert [c.kind for c in changes_in(index.get("moved").text)] == ["moved"]  # type: ignore[union-attr]
    assert index.validity()["plan"].superseded_by == "moved"
    assert _recalled(index, "箱根っていつ行くんだっけ", {"plan"}) == {"moved"}


def test_a_cancelled_plan_is_not_recalled_as_upcoming() -> None:
    index = _index({
        "plan": ("2027-09-01", "あなたは11月8日（2027年11月8日）に陶芸教室の体験に行く予定だ。"),
        "other": ("2027-09-05", "あなたは陶芸の本を図書館で借りた。"),
        "cancel": ("2027-09-25", "あなたは仕事が入ったので、陶芸教室の体験をキャンセルした。")})
    assert index.validity()["plan"].superseded_by == "cancel"
    assert "other" not in index.validity()
    assert _recalled(index, "陶芸教室の体験っていつだっけ", {"plan", "other"}) == {"cancel", "other"}


def test_trying_something_once_changes_nothing() -> None:
    assert changes_in("あなたはいつもの洗剤を別のメーカーのものに変えてみたら、元のほうがよかった。") == ()
    assert not lasts("あなたは駅前の新しいパン屋でクロワッサンを買った。")
    assert lasts("あなたは毎晩ストレッチをしている。")


def test_a_plan_called_off_then_replaced_by_another_the_other_holds_now() -> None:
    index = _index({
        "plan": ("2027-08-01", "あなたは8月21日（2027年8月21日）から家族で白馬へ旅行する予定だ。"),
        "cancel": ("2027-08-10", "あなたは娘が熱を出したので、白馬旅行をキャンセルした。"),
        "instead": ("2027-08-15", "あなたは白馬の代わりに、8月29日（2027年8月29日）に日帰りで海へ行くことにした。")})
    validity = index.validity()["plan"]
    assert (validity.superseded_by, validity.latest_by) == ("cancel", "instead")
    assert index.current_version("plan") == "instead"
    assert [m.id for m in index.versions("plan")] == ["plan", "cancel", "instead"]


def test_a_thing_given_up_or_sold_is_no_longer_held() -> None:
    index = _index({
        "car": ("2026-10-05", "あなたは青い軽自動車に乗っていて、週末はよく運転している。"),
        "sold": ("2027-04-02", "あなたは引っ越しを機に軽自動車を手放して、カーシェアを使っている。")})
    assert index.validity()["car"].superseded_by == "sold"
    assert changes_in("あなたは台風のニュースを見て、外出は控えようと思った。") == ()



def test_a_newer_memory_is_added_to_the_validity_without_going_over_the_rest() -> None:
    index = _index(HOMES)
    assert index.validity()["sapporo"].superseded_by == "sendai"
    index.add(Memory(id="osaka", user="u", text="あなたは大阪の梅田に引っ越した。",
                     created_at=datetime.fromisoformat("2027-09-01T20:00:00+09:00")))
    added = dict(index.validity())
    assert added["sendai"].superseded_by == "osaka"
    assert index.current_version("sapporo") == "osaka"
    index.revision += 1   # anything else (a forget, a link) derives it all again
    assert index.validity() == added
