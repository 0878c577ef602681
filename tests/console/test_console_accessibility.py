"""The console for everyone: axe-core finds nothing, a 390 px phone needs no sideways
scrolling, the keyboard reaches everything, every button says what it does, and no
request of a normal visit fails (the icon included)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

SCREENS = ["#/people", "#/devices", "#/turns", "#/status", "#/person/nana"]


@pytest.fixture(scope="module")
def populated(omoide_server: Any, cat_memories_module: list[dict[str, Any]]) -> Any:
    """A server with a person who has memories and turns, and a robot waiting with a
    code, so every panel has something in it."""
    from omoide_device_stackchan.simulator import ProvisioningRefused, SimulatedStackChan

    omoide_server.import_memories("nana", cat_memories_module)
    omoide_server.add_person("otto")
    omoide_server.text_turn("nana", "猫のこと覚えてる？")
    omoide_server.text_turn("nana", "ありがとう")

    async def waiting_robot() -> None:
        robot = SimulatedStackChan(omoide_server.url, firmware_version="1.6.2")
        try:
            await robot.provision()
        except ProvisioningRefused:
            return
    omoide_server.run(waiting_robot())
    return omoide_server


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 390, "height": 844},
                                  device_scale_factor=1, is_mobile=True, has_touch=True)
    p = context.new_page()
    p.set_default_timeout(20_000)
    try:
        yield p
    finally:
        context.close()


def _show(page: Any, server: Any, screen: str) -> None:
    page.goto(f"{server.url}/{screen}")
    expect(page.locator("#view h1")).to_be_visible()
    expect(page.locator("#view")).not_to_contain_text("Loading…")


def test_axe_finds_no_violations_on_any_screen(page: Any, populated: Any) -> None:
    page.goto(populated.url + "/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    found = {"sign-in": populated.axe_violations(page)}
    populated.sign_in(page, populated.admin_token())
    for screen in SCREENS:
        _show(page, populated, screen)
        found[screen] = populated.axe_violations(page)
    page.get_by_role("searchbox", name="Search").fill("猫")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#memory-note")).to_contain_text("relevant")
    page.locator("article.memory").first.get_by_role("button", name="Forget").click()
    expect(page.locator("#undo button")).to_be_visible()
    found["search and undo"] = populated.axe_violations(page)
    assert {k: v for k, v in found.items() if v} == {}


def test_every_screen_fits_a_390px_phone_without_sideways_scrolling(
        phone: Any, populated: Any) -> None:
    phone.goto(populated.url + "/")
    expect(phone.get_by_role("heading", name="Sign in")).to_be_visible()
    overflow = {"sign-in": populated.horizontal_overflow(phone)}
    populated.screenshot(phone, "390-sign-in")
    populated.sign_in(phone, populated.admin_token())
    for screen in SCREENS:
        _show(phone, populated, screen)
        overflow[screen] = populated.horizontal_overflow(phone)
        populated.screenshot(phone, "390-" + screen.strip("#/").replace("/", "-"))
    assert overflow == dict.fromkeys(overflow, 0)


def test_the_landmarks_are_there_and_every_button_has_its_own_name(
        page: Any, populated: Any) -> None:
    populated.sign_in(page, populated.admin_token())
    _show(page, populated, "#/person/nana")
    expect(page.get_by_role("banner")).to_have_count(1)
    expect(page.get_by_role("navigation", name="Sections")).to_have_count(1)
    expect(page.get_by_role("main")).to_have_count(1)
    expect(page.get_by_role("contentinfo")).to_have_count(1)
    expect(page.get_by_role("search", name="Search memories")).to_have_count(1)
    names = page.evaluate("() => [...document.querySelectorAll('button')]"
                          ".filter(b => b.offsetParent !== null)"
                          ".map(b => b.getAttribute('aria-label') || b.textContent.trim())")
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_signing_in_and_moving_around_works_from_the_keyboard(
        page: Any, populated: Any) -> None:
    page.goto(populated.url + "/")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.get_by_label("Token").focus()
    page.keyboard.type(populated.admin_token())
    page.keyboard.press("Enter")
    # each Enter waits for the server (signing in, a person's page): as long as a loaded
    # machine needs, not expect's default 5 s
    expect(page.get_by_role("heading", name="People", level=1)).to_be_focused(timeout=20_000)
    people = page.get_by_role("link", name="nana")
    people.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="nana", level=1)).to_be_focused(timeout=20_000)


def test_a_visit_makes_no_failing_request_not_even_for_the_icon(
        page: Any, populated: Any) -> None:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}")
            if r.status >= 400 else None)
    populated.sign_in(page, populated.admin_token())
    for screen in SCREENS:
        _show(page, populated, screen)
    icon = page.evaluate("async () => (await fetch('/favicon.ico')).status")
    assert (failed, icon) == ([], 200)
