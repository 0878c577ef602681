"""What an owner does in the console, in a real browser: sign in, pair a robot, look after
a person's memories and profile, and watch turns arrive live."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect


def test_the_admin_signs_in_with_the_token_and_sees_everyone(
        page: Any, omoide_server: Any) -> None:
    omoide_server.add_person("alice")
    omoide_server.add_person("bob")
    page.goto(omoide_server.url + "/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    omoide_server.screenshot(page, "01-sign-in")
    omoide_server.sign_in(page, omoide_server.admin_token())
    expect(page.get_by_text("Signed in as the admin")).to_be_visible()
    people = page.locator("#people-table")
    expect(people.get_by_role("link", name="alice")).to_be_visible()
    expect(people.get_by_role("link", name="bob")).to_be_visible()
    expect(page.locator("#zone-note")).to_contain_text("Asia/Tokyo")
    omoide_server.screenshot(page, "02-people")
    assert page.console_errors == []


def test_signing_out_leaves_nothing_of_anyone_on_the_page(
        page: Any, omoide_server: Any) -> None:
    omoide_server.add_person("alice")
    omoide_server.sign_in(page, omoide_server.admin_token())
    expect(page.get_by_role("link", name="alice")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.locator("#view")).to_be_empty()
    status = page.evaluate("async () => (await fetch('/v1/users')).status")
    assert status == 401                                  # the cookie's session has ended


def test_a_person_signs_in_and_sees_only_themselves(
        page: Any, omoide_server: Any) -> None:
    omoide_server.add_person("bob")
    omoide_server.import_memories("carol", [{"text": "あなたはチェロを習っている。"}])
    omoide_server.import_memories("bob", [{"text": "あなたは将棋が好きだ。"}])
    omoide_server.sign_in(page, omoide_server.person_token("carol"))
    expect(page.get_by_text("Signed in as carol")).to_be_visible()
    expect(page.get_by_role("heading", name="carol", level=1)).to_be_visible()
    expect(page.locator("article.memory")).to_contain_text("あなたはチェロを習っている。")
    nav = page.get_by_role("navigation", name="Sections")
    expect(nav.get_by_role("link")).to_have_count(1)       # no People, no Devices
    page.goto(omoide_server.url + "/#/person/bob")          # typed by hand: back to carol
    expect(page.get_by_role("heading", name="carol", level=1)).to_be_visible()
    assert "将棋" not in page.content()
    listed = page.evaluate("async () => (await (await fetch('/v1/users')).json()).people"
                           ".map(p => p.user)")
    assert listed == ["carol"]
    omoide_server.screenshot(page, "03-person-signed-in")


def test_a_robot_waiting_with_a_code_is_paired_from_the_devices_page(
        page: Any, omoide_server: Any) -> None:
    from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan

    omoide_server.add_person("dave")
    robot = SimulatedStackChan(omoide_server.url, serial_number="SN-CONSOLE-1",
                               chip_key=b"chip", firmware_version="1.6.2")

    async def ask_for_code() -> str:
        try:
            await robot.provision()
        except ProvisioningRefused as refused:
            assert await robot.activate() == 202
            return str(refused.activation["code"])
        raise AssertionError("an unknown robot was given a token")

    code = omoide_server.run(ask_for_code())
    omoide_server.sign_in(page, omoide_server.admin_token())
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Devices").click()
    expect(page.get_by_text(code, exact=True)).to_be_visible()
    omoide_server.screenshot(page, "04-devices-waiting")
    page.get_by_label(f"Pair code {code} to").select_option("dave")
    page.get_by_label("Name (optional)").first.fill("書斎")
    page.get_by_role("button", name=f"Pair code {code}").click()
    expect(page.locator("#device-result")).to_contain_text("to dave")
    paired = page.get_by_role("row").filter(has_text=robot.device_id)
    expect(paired).to_contain_text("書斎")
    expect(paired.get_by_role("link", name="dave")).to_be_visible()
    expect(paired).to_contain_text("1.6.2")
    expect(paired).to_contain_text("m5stack-stackchan")
    assert omoide_server.run(robot.activate()) == 200     # the robot is let in
    omoide_server.screenshot(page, "05-devices-paired")


def test_a_paired_robot_is_renamed_and_revoked_from_the_devices_page(
        page: Any, omoide_server: Any) -> None:
    from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan

    omoide_server.add_person("ema")
    robot = SimulatedStackChan(omoide_server.url)

    async def pair() -> None:
        try:
            await robot.provision()
        except ProvisioningRefused as refused:
            with omoide_server.client() as c:
                c.post("/v1/devices/pair", json={"code": refused.activation["code"],
                                                 "user": "ema", "name": "台所"}
                       ).raise_for_status()

    omoide_server.run(pair())
    omoide_server.sign_in(page, omoide_server.admin_token())
    page.goto(f"{omoide_server.url}/#/devices")
    label = f"台所 ({robot.device_id})"
    page.get_by_label(f"New name for {label}").fill("居間")
    page.get_by_role("button", name=f"Rename {label}").click()
    expect(page.locator("#device-result")).to_contain_text("Renamed to 居間")
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=f"Revoke 居間 ({robot.device_id})").click()
    expect(page.locator("#device-result")).to_contain_text("Revoked")
    row = page.get_by_role("row").filter(has_text=robot.device_id)
    expect(row).to_contain_text("revoked")
    with omoide_server.client() as c:
        [device] = [d for d in c.get("/v1/devices").json()["devices"]
                    if d["device_id"] == robot.device_id]
    assert (device["name"], device["state"]) == ("居間", "revoked")


def _open_person(page: Any, omoide: Any, user: str) -> None:
    omoide.sign_in(page, omoide.admin_token())
    page.goto(f"{omoide.url}/#/person/{user}")
    expect(page.get_by_role("heading", name=user, level=1)).to_be_visible()
    expect(page.locator("#memory-note")).not_to_have_text("")


def test_search_lists_only_the_memories_a_query_is_about(
        page: Any, omoide_server: Any, cat_memories: list[dict[str, Any]]) -> None:
    omoide_server.import_memories("erin", cat_memories)
    _open_person(page, omoide_server, "erin")
    expect(page.locator("article.memory")).to_have_count(len(cat_memories))
    page.get_by_role("searchbox", name="Search").fill("猫")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#memory-note")).to_contain_text("relevant to “猫”")
    cards = page.locator("article.memory")
    expect(cards).to_have_count(2)
    expect(cards.first).to_contain_text("むぎ")
    expect(cards.first.locator(".score")).to_contain_text("relevance")
    omoide_server.screenshot(page, "06-search-narrowed")
    page.get_by_role("searchbox", name="Search").fill("株価")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#memory-note")).to_contain_text("Nothing relevant to “株価”")
    expect(page.locator("article.memory")).to_have_count(0)


def test_a_forgotten_memory_comes_back_with_undo(page: Any, omoide_server: Any) -> None:
    omoide_server.import_memories("fumi", [{"text": "あなたはピアノを習っている。"},
                                           {"text": "あなたは紅茶が好きだ。"}])
    _open_person(page, omoide_server, "fumi")
    page.get_by_role("button", name="Forget “あなたは紅茶が好きだ。”").click()
    expect(page.locator("article.memory")).to_have_count(1)
    undo = page.get_by_role("button", name="Undo forgetting “あなたは紅茶が好きだ。”")
    expect(undo).to_be_visible()
    expect(page.locator("#profile")).not_to_contain_text("紅茶")   # it was a profile fact
    omoide_server.screenshot(page, "07-forgotten-with-undo")
    undo.click()
    expect(page.locator("#memory-note")).to_contain_text("Restored")
    expect(page.locator("article.memory")).to_have_count(2)
    expect(page.locator("#profile")).to_contain_text("紅茶")
    with omoide_server.client() as c:
        texts = {m["text"] for m in c.get("/v1/users/fumi/memories").json()["memories"]}
    assert "あなたは紅茶が好きだ。" in texts


def test_an_import_reports_what_it_stored_and_skips_it_the_second_time(
        page: Any, omoide_server: Any, tmp_path: Path,
        cat_memories: list[dict[str, Any]]) -> None:
    omoide_server.add_person("gen")
    export = tmp_path / "gen-memories.jsonl"
    export.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n"
                              for m in cat_memories[:3]), encoding="utf-8")
    _open_person(page, omoide_server, "gen")
    for expected in ("3 imported, 0 skipped", "0 imported, 3 skipped"):
        page.get_by_label("Import a .jsonl export").set_input_files(str(export))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(page.locator("#import-report")).to_contain_text(expected)
    expect(page.locator("article.memory")).to_have_count(3)
    omoide_server.screenshot(page, "08-import-report")


def test_export_downloads_a_jsonl_file_named_for_the_person(
        page: Any, omoide_server: Any, tmp_path: Path,
        cat_memories: list[dict[str, Any]]) -> None:
    omoide_server.import_memories("hana", cat_memories[:2])
    _open_person(page, omoide_server, "hana")
    with page.expect_download() as info:
        page.get_by_role("link", name="Export hana's memories (.jsonl)").click()
    download = info.value
    assert download.suggested_filename == "hana-memories.jsonl"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    lines = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    assert {m["text"] for m in lines} == {m["text"] for m in cat_memories[:2]}


def test_a_profile_fact_is_added_and_taken_out_from_the_page(
        page: Any, omoide_server: Any) -> None:
    omoide_server.add_person("iku")
    with omoide_server.client() as c:
        if not c.get("/v1/users/iku").json()["features"]["profile"]:
            pytest.skip("this omoide has no profile routes yet (/v1/users/{user}/profile)")
    _open_person(page, omoide_server, "iku")
    page.get_by_label("New profile fact").fill("あなたはそばアレルギーがある。")
    page.get_by_role("button", name="Add to profile").click()
    facts = page.locator("#profile-facts")
    expect(facts).to_contain_text("そばアレルギー")
    omoide_server.screenshot(page, "09-profile")
    page.get_by_role("button", name="Take out of profile: “あなたはそばアレルギーがある。”").click()
    expect(page.locator("#profile-note")).to_contain_text("kept as a memory")
    expect(page.locator("#profile-facts")).to_have_count(0)
    expect(page.locator("article.memory")).to_contain_text("そばアレルギー")


def test_extract_now_says_what_it_stored_merged_and_superseded(
        page: Any, omoide_server: Any) -> None:
    omoide_server.text_turn("lena", "来週の土曜日に友達と箱根に行くんだ")
    _open_person(page, omoide_server, "lena")
    page.get_by_role("button", name="Extract now").click()
    report = page.locator("#extract-report")
    expect(report).to_contain_text("Stored 1")
    expect(report).to_contain_text("箱根に行く")
    expect(page.locator("article.memory")).to_have_count(1)
    omoide_server.text_turn("lena", "来週の土曜日に友達と箱根に行くんだ")   # said again
    page.get_by_role("button", name="Extract now").click()
    expect(report).to_contain_text("Stored 0")
    expect(report).to_contain_text("Merged 1")
    expect(page.locator("article.memory")).to_have_count(1)
    omoide_server.text_turn("lena", "箱根に行くのは来週の日曜日に変えたよ")  # a change of plan
    page.get_by_role("button", name="Extract now").click()
    expect(report).to_contain_text("Stored 1")
    expect(report).to_contain_text("Superseded 1")
    expect(report.get_by_role("listitem").last).to_contain_text("来週の土曜日")
    newest = page.locator("article.memory")
    expect(newest).to_have_count(1)                  # the old plan is under its successor
    newest.get_by_text("Earlier versions (1)").click()
    expect(newest).to_contain_text("来週の土曜日")
    omoide_server.screenshot(page, "09b-extract-report")


def test_a_new_turn_appears_live_with_its_stages_on_a_time_axis(
        page: Any, omoide_server: Any) -> None:
    omoide_server.add_person("jun")
    omoide_server.sign_in(page, omoide_server.admin_token())
    page.get_by_role("link", name="Turns, live").click()
    expect(page.get_by_text("Live: new turns appear here")).to_be_visible()
    said = omoide_server.text_turn("jun", "週末は晴れるかな")
    card = page.locator("article.turn").filter(has_text="週末は晴れるかな")
    expect(card).to_be_visible()
    expect(card).to_contain_text(said["reply"])
    expect(card).to_contain_text(f"face: {said['emotion']}")
    expect(card).to_contain_text("typed (HTTP)")
    gantt = card.locator("table.gantt")
    expect(gantt.get_by_role("rowheader", name="retrieve")).to_be_visible()
    expect(gantt.get_by_role("rowheader", name="first token")).to_be_visible()
    expect(gantt.get_by_role("rowheader", name="done")).to_be_visible()
    expect(card.get_by_role("list", name="Colour key")).to_contain_text("chat model")
    # a text turn takes milliseconds: its own axis is in milliseconds
    expect(card.locator("caption")).to_contain_text(re.compile(r"done\s+\([\d.]+ ms\)"))
    omoide_server.screenshot(page, "10-turn-live")


def test_a_robot_turn_shows_its_device_and_seconds_long_stages(
        page: Any, omoide_server: Any) -> None:
    from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan

    omoide_server.add_person("kai")
    robot = SimulatedStackChan(omoide_server.url)        # plays audio in real time

    async def pair_and_talk() -> None:
        try:
            await robot.provision()
        except ProvisioningRefused as refused:
            with omoide_server.client() as c:
                c.post("/v1/devices/pair", json={"code": refused.activation["code"],
                                                 "user": "kai"}).raise_for_status()
        await robot.provision()
        await robot.connect()
        try:
            assert (await robot.type_text("こんにちは")).complete
        finally:
            await robot.close()

    omoide_server.sign_in(page, omoide_server.admin_token())
    page.goto(f"{omoide_server.url}/#/person/kai")
    expect(page.get_by_text("Live: new turns appear here")).to_be_visible()
    omoide_server.run(pair_and_talk())
    card = page.locator("article.turn").filter(has_text=f"robot {robot.device_id}")
    expect(card).to_be_visible()
    expect(card.locator("table.gantt").get_by_role("rowheader", name="first audio")) \
        .to_be_visible()
    expect(card.locator("caption")).to_contain_text(re.compile(r"done\s+\(\d+\.\d+ s\)"))
    omoide_server.text_turn("kai", "ありがとう")          # a text turn (ms) beside it
    expect(page.locator("article.turn")).to_have_count(2)
    omoide_server.screenshot(page, "11-robot-and-text-turns")


def test_a_page_without_a_session_reads_nothing(omoide_server: Any) -> None:
    r = httpx.get(f"{omoide_server.url}/v1/users")
    assert r.status_code == 401


def test_a_robots_household_is_shown_and_answers_guests_from_the_devices_page(
        page: Any, omoide_server: Any) -> None:
    from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan

    omoide_server.add_person("fumi")
    omoide_server.add_person("gen")
    robot = SimulatedStackChan(omoide_server.url)

    async def pair() -> None:
        try:
            await robot.provision()
        except ProvisioningRefused as refused:
            with omoide_server.client() as c:
                c.post("/v1/devices/pair", json={"code": refused.activation["code"],
                                                 "user": "fumi", "name": "玄関"}
                       ).raise_for_status()

    omoide_server.run(pair())
    omoide_server.sign_in(page, omoide_server.admin_token())
    page.goto(f"{omoide_server.url}/#/devices")
    label = f"玄関 ({robot.device_id})"
    row = page.get_by_role("row").filter(has_text=robot.device_id)
    expect(row).to_contain_text("fumi (default)")
    page.get_by_label(f"Add to {label}").select_option("gen")
    page.get_by_role("button", name=f"Add a person to {label}").click()
    expect(page.locator("#device-result")).to_contain_text("serves fumi, gen")
    page.get_by_label(f"Unrecognised voice for {label}").select_option("")
    page.get_by_role("button", name=f"Set who answers on {label}").click()
    expect(page.locator("#device-result")).to_contain_text("an unrecognised voice is a guest")
    with omoide_server.client() as c:
        [shown] = [d for d in c.get("/v1/devices").json()["devices"]
                   if d["device_id"] == robot.device_id]
    assert shown["household"] == {"members": ["fumi", "gen"], "default_person": None,
                                  "guest": True}
