"""Moments in the person's hands: ``omoide moments list|cancel|off|on`` through the
running server, the console's routes (a person reaches only their own), and
「そういうのは言わなくていいよ」 switching moments off only after a clear yes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
import yaml

from omoide.cli import main
from omoide.config import load_settings
from omoide.data_dir_owner import DataDirClaim
from omoide.moments.config import MomentsSettings
from omoide.moments.delivery import MomentScheduler
from omoide.moments.ledger import MomentLedger
from omoide.moments.planning import ListedMemories
from omoide.moments.voice_switch import AGAIN, ASK, ASK_AGAIN, DONE, KEPT, KEPT_OFF
from omoide.pipeline.turn import TurnRequest
from omoide.plugins import build_registry
from omoide.server.app import create_app
from omoide.testing.auth import admin_headers, person_headers
from omoide.testing.http import LocalServer
from omoide.types import Memory

TOKYO = ZoneInfo("Asia/Tokyo")
CONFIG = """
embed: {use: fake}
store: {use: fake}
asr: {use: fake}
chat: {use: fake, reply: "箱根、どうだった？"}
tts: {use: fake}
moments: {quiet_hours: "00:00-00:00", text_turns: true}
"""


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[str, str, Any]]:
    """``omoide serve`` on a data dir where aki's trip ended yesterday; yields the
    config path, the server's URL and the app."""
    registry = build_registry([("asr", "fake"), ("memory_engine", "robust")])
    config = tmp_path / "omoide.yaml"
    data = yaml.safe_load(CONFIG) | {"server": {"data_dir": str(tmp_path / "data")}}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    settings = load_settings(config, registry=registry)
    app = create_app(settings, registry)
    with DataDirClaim.acquire(settings.data_dir, "omoide serve") as claim, \
            LocalServer(app, lifespan="on") as url:
        claim.publish_server(url)
        deadline = time.monotonic() + 20
        while httpx.get(f"{url}/healthz").json()["status"] == "starting":
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.05)
        yesterday = datetime.now(TOKYO).date() - timedelta(days=1)
        item = {"id": "trip", "text": "あなたは箱根へ旅行する予定だ。", "kind": "plan",
                "event_dates": [yesterday.isoformat()], "entities": ["箱根"],
                "created_at": (datetime.now(TOKYO) - timedelta(days=5)).isoformat()}
        r = httpx.post(f"{url}/v1/users/aki/memories/import", content=json.dumps([item]),
                       headers={**admin_headers(app), "content-type": "application/json"})
        assert r.status_code == 200, r.text
        httpx.post(f"{url}/v1/users", json={"user": "aki"}, headers=admin_headers(app))
        yield str(config), url, app


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["moments", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_lists_cancels_and_switches_through_the_server(
        running: tuple[str, str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    config, url, app = running
    code, out, _ = run(capsys, "list", "--config", config, "--user", "aki", "--json")
    [aki] = json.loads(out)
    assert code == 0 and not aki["off"]
    [follow_up] = aki["upcoming"]
    assert follow_up["kind"] == "follow_up" and follow_up["topic"] == "箱根"
    code, out, _ = run(capsys, "cancel", "--config", config, "--user", "aki",
                       follow_up["key"], "--every")
    assert (code, out.strip()) == (0, f"cancelled {follow_up['key']} and every "
                                      "repetition for aki")
    [aki] = json.loads(run(capsys, "list", "--config", config, "--user", "aki",
                           "--json")[1])
    assert aki["upcoming"] == [] and aki["said"][0]["state"] == "cancelled"
    reply = httpx.post(f"{url}/v1/turns", json={"user": "aki", "text": "ただいま"},
                       headers=admin_headers(app)).json()["reply"]
    assert "そういえば" not in reply
    assert run(capsys, "off", "--config", config, "--user", "aki")[0] == 0
    assert json.loads(run(capsys, "list", "--config", config, "--json")[1])[0]["off"]
    assert run(capsys, "cancel", "--config", config, "--user", "aki", "nope")[0] == 1


def test_a_person_sets_their_own_quiet_hours_from_the_cli_and_the_console(
        running: tuple[str, str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    config, url, app = running
    code, out, _ = run(capsys, "quiet", "--config", config, "--user", "aki", "21:00-6:30")
    assert (code, out.strip()) == (0, "quiet hours for aki: 21:00-06:30 (own)")
    [aki] = json.loads(run(capsys, "list", "--config", config, "--user", "aki",
                           "--json")[1])
    assert (aki["quiet_hours"], aki["quiet_hours_from"]) == ("21:00-06:30", "own")
    path = f"{url}/v1/users/aki/moments/quiet_hours"
    mine = person_headers(app, "aki")
    set_by_aki = httpx.put(path, json={"quiet_hours": "20:00-07:00"}, headers=mine)
    assert set_by_aki.json() == {"user": "aki", "quiet_hours": "20:00-07:00",
                                 "quiet_hours_from": "own"}
    assert httpx.put(path, json={"quiet_hours": "夜"}, headers=mine).status_code == 422
    assert httpx.put(path.replace("aki", "ben"), json={"quiet_hours": "20:00-07:00"},
                     headers=mine).status_code == 403
    assert run(capsys, "quiet", "--config", config, "--user", "aki", "default")[0] == 0
    listing = httpx.get(f"{url}/v1/users/aki/moments", headers=mine).json()
    assert (listing["quiet_hours"], listing["quiet_hours_from"]) == ("00:00-00:00",
                                                                     "household")
    with pytest.raises(SystemExit):
        run(capsys, "quiet", "--config", config, "--user", "aki", "after dinner")


def test_a_persons_token_reaches_only_their_own_moments(
        running: tuple[str, str, Any]) -> None:
    _, url, app = running
    aki = person_headers(app, "aki")
    mine = httpx.get(f"{url}/v1/users/aki/moments", headers=aki)
    assert mine.status_code == 200 and mine.json()["upcoming"][0]["kind"] == "follow_up"
    assert httpx.get(f"{url}/v1/users/ben/moments", headers=aki).status_code == 403
    assert httpx.get(f"{url}/v1/moments", headers=aki).status_code == 403
    switched = httpx.put(f"{url}/v1/users/aki/moments/switch", json={"off": True},
                         headers=aki)
    assert switched.json() == {"user": "aki", "off": True}


@dataclass
class Clock:
    at: datetime

    def now(self) -> datetime:
        return self.at


def _scheduler(tmp_path: Path, clock: Clock) -> MomentScheduler:
    source = ListedMemories("Asia/Tokyo")
    source.add(Memory("m1", "aki", "あなたは12月12日に箱根へ旅行する予定だ。",
                      datetime(2026, 12, 1, tzinfo=TOKYO), (date(2026, 12, 12),), "plan",
                      ("箱根",)))

    async def people() -> list[str]:
        return ["aki"]

    return MomentScheduler(MomentsSettings(), MomentLedger(tmp_path / "m.sqlite3"), source,
                           people, timezone="Asia/Tokyo", clock=clock)


async def _turn(s: MomentScheduler, text: str) -> str | None:
    await s.heard("aki", text)
    words = await s.opener(TurnRequest(user="aki", text=text, device="robot-1"),
                           s.clock.now())
    s.presence.turn_done("t", s.clock.now())
    return words


@pytest.mark.parametrize(("answer", "off"), [("うん、お願い", True), ("いや、やっぱりいい", False),
                                             ("大丈夫", False)])
async def test_saying_stop_after_a_moment_asks_then_a_clear_yes_switches_off(
        tmp_path: Path, answer: str, off: bool) -> None:
    clock = Clock(datetime(2026, 12, 11, 18, 0, tzinfo=TOKYO))
    s = _scheduler(tmp_path, clock)
    assert (await _turn(s, "ただいま") or "").startswith("そういえば、明日は箱根だね")
    clock.at += timedelta(minutes=1)
    assert await _turn(s, "そういうのは言わなくていいよ") == ASK
    assert not await s.ledger.is_off("aki")
    clock.at += timedelta(minutes=1)
    assert await _turn(s, answer) == (DONE if off else KEPT)
    assert await s.ledger.is_off("aki") is off


@pytest.mark.parametrize(("answer", "on"), [("うん", True), ("やっぱりいいや", False)])
async def test_asking_for_them_again_while_off_asks_then_a_clear_yes_switches_on(
        tmp_path: Path, answer: str, on: bool) -> None:
    clock = Clock(datetime(2026, 12, 11, 18, 0, tzinfo=TOKYO))
    s = _scheduler(tmp_path, clock)
    await s.ledger.set_off("aki", True, clock.at - timedelta(days=3))
    assert await _turn(s, "やっぱりまた予定のこと教えてほしいな") == ASK_AGAIN
    assert await s.ledger.is_off("aki")
    clock.at += timedelta(minutes=1)
    assert await _turn(s, answer) == (AGAIN if on else KEPT_OFF)
    assert await s.ledger.is_off("aki") is not on


@pytest.mark.parametrize("text", ["もう一回言って", "明日の予定教えて", "また明日ね"])
async def test_a_plain_request_to_repeat_or_a_question_asks_nothing(
        tmp_path: Path, text: str) -> None:
    clock = Clock(datetime(2026, 12, 11, 18, 0, tzinfo=TOKYO))
    s = _scheduler(tmp_path, clock)
    await s.ledger.set_off("aki", True, clock.at - timedelta(days=3))
    assert await _turn(s, text) is None
    assert await s.ledger.is_off("aki")


async def test_moments_off_in_the_config_are_not_switched_on_by_voice(
        tmp_path: Path) -> None:
    s = _scheduler(tmp_path, Clock(datetime(2026, 12, 11, 18, 0, tzinfo=TOKYO)))
    s.settings = MomentsSettings(people={"aki": {"off": True}})
    assert await _turn(s, "やっぱりまた予定のこと教えてほしいな") is None


async def test_a_reminder_cancelled_once_comes_back_tomorrow_stopped_for_good_never(
        tmp_path: Path) -> None:
    clock = Clock(datetime(2026, 12, 11, 7, 30, tzinfo=TOKYO))
    s = _scheduler(tmp_path, clock)
    s.memories.add(Memory("m2", "aki", "あなたは毎朝8時に薬を飲むので、その時間に声をかけて"
                          "ほしいと頼んだ。", datetime(2026, 12, 1, tzinfo=TOKYO), (), "habit"))

    async def reminders() -> list[str]:
        return [m["key"] for m in (await s.listing("aki"))["upcoming"]
                if m["kind"] == "reminder"]

    today, tomorrow = "m2:reminder:2026-12-11", "m2:reminder:2026-12-12"
    assert await reminders() == [today, tomorrow]
    assert (await s.listing("aki"))["upcoming"][0]["repeats"] is True
    assert await s.cancel("aki", today, "console")
    assert await reminders() == [tomorrow]
    assert await s.cancel("aki", tomorrow, "console", every=True)
    assert await reminders() == []
    clock.at += timedelta(days=5)
    assert await reminders() == []
    assert [m["kind"] for m in (await s.listing("aki"))["upcoming"]] == ["follow_up"]


async def test_saying_stop_long_after_any_moment_asks_nothing(tmp_path: Path) -> None:
    s = _scheduler(tmp_path, Clock(datetime(2026, 12, 9, 18, 0, tzinfo=TOKYO)))
    assert await _turn(s, "そういうのは言わなくていいよ") is None


def test_without_a_server_the_cli_opens_the_data_dir_itself(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "omoide.yaml"
    data = yaml.safe_load(CONFIG) | {"server": {"data_dir": str(tmp_path / "data")}}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert run(capsys, "off", "--config", str(config), "--user", "aki")[0] == 0
    code, out, _ = run(capsys, "list", "--config", str(config), "--user", "aki", "--json")
    [aki] = json.loads(out)
    assert code == 0 and aki["off"] is True and aki["upcoming"] == []
    assert (tmp_path / "data" / "moments.sqlite3").exists()
