"""A simulated fortnight (``omoide bench moments``): four people with plans, birthdays, a
cancelled and a moved plan, quiet hours (one person's own), a robot off for two days, a
robot two of them share and a guest. The issue's targets: nothing missed, duplicated,
said in quiet hours (the person's, or pushed in those of someone near a shared robot),
said about a stale plan or said to a guest, every pushed moment journaled once — and a
restart in the middle changes none of it. Run with ``-s`` to see the figures per
person."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omoide_bench.benches.moments import DAYS, STALE, STEP, ZONE, score, simulate

ZERO = ("missed", "duplicated", "quiet hours", "near quiet", "stale", "to a guest",
        "not journaled")


def _show(title: str, report: dict[str, dict[str, int]]) -> None:
    print(f"\n{title}")
    for person, figures in report.items():
        print(f"  {person}: {json.dumps(figures, ensure_ascii=False)}")


async def test_the_fortnight_meets_every_target(tmp_path: Path, standin_chat: object) -> None:
    run = await simulate(tmp_path, standin_chat)
    report = score(run)
    _show("moments over a fortnight", report)
    for person, figures in report.items():
        assert figures["due"] > 0, person
        assert {k: figures[k] for k in ZERO} == dict.fromkeys(ZERO, 0), person
        assert figures["on time"] + figures["late"] == figures["due"], person
    # the follow-up of ben's fishing came at his next wake after two days away
    assert report["ben"]["late"] == 1
    late = [d for d in run.deliveries if d.moment.key == "b-fishing:follow_up"]
    assert [(d.how, d.at.day, d.at.hour) for d in late] == [("opener", 11, 8)]


async def test_a_shared_robot_keeps_quiet_for_the_member_asleep_near_it(
        tmp_path: Path) -> None:
    """dan (quiet until 08:00, his own) spoke to the robot he shares with aki at 19:30:
    aki's morning moments wait until he is no longer taken to be near it (12 hours)."""
    run = await simulate(tmp_path)
    mornings = {d.moment.key: d.at.astimezone(ZONE).strftime("%d %H:%M")
                for d in run.deliveries if d.how == "pushed" and d.moment.person == "aki"}
    assert mornings["a-hakone:morning_of"] == "12 07:30"
    assert mornings["a-mother:birthday:2026"] == "15 07:30"
    pushed = [d for d in run.deliveries if d.how == "pushed"]
    assert sorted(e.id for e in run.journal) == sorted(f"moment-{d.moment.key}"
                                                       for d in pushed)


async def test_a_cancelled_or_moved_plan_plans_nothing_for_its_old_date(
        tmp_path: Path) -> None:
    run = await simulate(tmp_path)
    stale = set().union(*STALE.values())
    assert not [k for k, m in run.planned.items() if set(m.reasons) & stale]
    sports = sorted((m.kind.value, m.about.day) for m in run.planned.values()
                    if m.reasons == ("b-sports-new",))
    assert sports == [("day_before", 19), ("follow_up", 19), ("morning_of", 19)]


async def test_a_restart_in_the_middle_changes_nothing(tmp_path: Path) -> None:
    straight = await simulate(tmp_path / "straight")
    halfway = int(DAYS * 24 * 60 / (STEP.total_seconds() / 60)) // 2
    restarted = await simulate(tmp_path / "restarted", restart_at=halfway)
    _show("with a restart halfway", score(restarted))
    assert score(restarted) == score(straight)
    assert [(d.moment.key, d.at) for d in restarted.deliveries] == \
        [(d.moment.key, d.at) for d in straight.deliveries]


async def test_the_chat_model_writes_each_line(tmp_path: Path, standin_chat: object) -> None:
    run = await simulate(tmp_path, standin_chat)
    said = {d.moment.key: d.text for d in run.deliveries}
    assert said["a-hakone:day_before"] == "明日は箱根だね。気をつけて行ってきてね。"
    assert said["a-hakone:follow_up"] == "箱根、どうだった？"
    assert said["a-mother:birthday:2026"].startswith("明日は母の誕生日だね。")
    assert said["c-medicine:reminder:2026-12-07"] == "そろそろ薬を飲む時間だよ。"


def test_omoide_bench_moments_reports_the_figures_per_person(
        capsys: pytest.CaptureFixture[str]) -> None:
    from omoide.cli import main

    assert main(["bench", "moments", "--chat", "none", "--restart", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert runs["straight"] == runs["restarted halfway"]
    assert set(runs["straight"]) == {"aki", "ben", "chie", "dan"}
    assert all(figures["missed"] == 0 for figures in runs["straight"].values())
