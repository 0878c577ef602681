"""The console in a real browser: Debian's chromium driven by playwright, against a real
``omoide serve`` (a subprocess on a free port, real Host/Origin checks and sessions).

The server runs the test doubles for ASR, TTS, VAD and the vector store (named as
doubles), the offline stand-in chat (rule-based replies and fact extraction, so
"extract now" stores real facts), the real e5 embedder (the relevance search is judged
on real vectors), the real memory engine and journal, and the real StackChan device
plugin. One server and one
browser per test module; each test gets a fresh browser context (no cookies).
Screenshots of each state go to ``test-artifacts/console/`` (gitignored).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

pytest.importorskip("omoide_device_stackchan")
pytest.importorskip("omoide_embed_e5")
playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "console"
AXE = Path(__file__).parent / "vendor" / "axe.min.js"

if not CHROMIUM.exists():
    pytest.skip("Debian's chromium is not installed (./dev.sh setup installs it)",
                allow_module_level=True)


def config_data(data_dir: Path, port: int, chat: dict[str, Any] | None = None,
                extraction: dict[str, Any] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(f"""
assistant: {{name: かな, timezone: Asia/Tokyo}}
server: {{data_dir: {data_dir}, host: 127.0.0.1, port: {port}}}
memory: {{extraction: {{on_disconnect: false, idle_minutes: 600, max_exchanges: 100}}}}
vad: {{use: fake}}
asr: {{use: fake, text: 今日は何の日？}}
embed: {{use: e5}}
store: {{use: fake}}
chat: {{use: standin}}
tts: {{use: fake, ms_per_char: 100}}
devices: [{{use: stackchan, hello_timeout_s: 5}}]
""")
    if chat is not None:
        data["chat"] = chat
    data["memory"]["extraction"].update(extraction or {})
    return data


@dataclass
class Omoide:
    """A running ``omoide serve`` and what tests need to talk to it."""

    url: str
    data_dir: Path
    process: subprocess.Popen[bytes]

    def admin_token(self) -> str:
        from omoide.testing.auth import admin_token
        return admin_token(self.data_dir)

    def person_token(self, user: str) -> str:
        from omoide.testing.auth import token_store
        token, _ = token_store(self.data_dir).create_person_token(user, label="browser test")
        return token

    def client(self) -> httpx.Client:
        """An HTTP client calling as the admin."""
        return httpx.Client(base_url=self.url, timeout=60,
                            headers={"Authorization": f"Bearer {self.admin_token()}"})

    def add_person(self, user: str) -> None:
        with self.client() as c:
            c.post("/v1/users", json={"user": user}).raise_for_status()

    def import_memories(self, user: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        body = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
        with self.client() as c:
            r = c.post(f"/v1/users/{user}/memories/import", content=body.encode(),
                       headers={"content-type": "application/x-ndjson"})
            r.raise_for_status()
            return dict(r.json())

    def text_turn(self, user: str, text: str) -> dict[str, Any]:
        with self.client() as c:
            r = c.post("/v1/turns", json={"user": user, "text": text})
            r.raise_for_status()
            return dict(r.json())

    def run(self, coro: Any) -> Any:
        """Run a coroutine (a simulated robot) to completion on a thread of its own
        (playwright's sync API keeps an event loop in the test's thread)."""
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, coro).result(timeout=120)

    # -- the browser side ------------------------------------------------------------
    def sign_in(self, page: Any, token: str) -> None:
        """Open the console and sign in with ``token`` as a person would."""
        page.goto(self.url + "/")
        page.get_by_label("Token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("button", name="Sign out").wait_for()

    @staticmethod
    def screenshot(page: Any, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    @staticmethod
    def horizontal_overflow(page: Any) -> int:
        """CSS pixels the page is wider than its viewport (0: no sideways scrolling)."""
        return int(page.evaluate("() => document.documentElement.scrollWidth"
                                 " - document.documentElement.clientWidth"))

    @staticmethod
    def axe_violations(page: Any) -> list[dict[str, Any]]:
        """axe-core's violations for the page as it is now (all default rules)."""
        if not page.evaluate("() => typeof window.axe !== 'undefined'"):
            page.add_script_tag(path=str(AXE))
        result = page.evaluate(
            "async () => (await axe.run(document)).violations.map(v => ({"
            "id: v.id, impact: v.impact, help: v.help,"
            " nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary)}))")
        return list(result)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def omoide_server(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Omoide]:
    """The module's server; a module may set ``SERVER_CHAT``, ``SERVER_EXTRACTION`` and
    ``SERVER_SPEAKER`` (config sections) to run another chat model, extraction settings
    or a speaker stage."""
    base = tmp_path_factory.mktemp("console")
    port = _free_port()
    config = base / "omoide.yaml"
    data = config_data(base / "data", port, getattr(request.module, "SERVER_CHAT", None),
                       getattr(request.module, "SERVER_EXTRACTION", None))
    if getattr(request.module, "SERVER_SPEAKER", None):   # a module's speaker stage
        data["speaker"] = request.module.SERVER_SPEAKER
    config.write_text(yaml.safe_dump(data, allow_unicode=True))
    log = (base / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "omoide.cli", "serve", "--config", str(config)],
        stdout=log, stderr=subprocess.STDOUT, cwd=base,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError("omoide serve stopped:\n"
                                   + (base / "server.log").read_text(errors="replace"))
            try:
                if httpx.get(f"{url}/healthz", timeout=2).json().get("status") == "ready":
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("omoide serve did not become ready in 120 s")
            time.sleep(0.2)
        yield Omoide(url, base / "data", process)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(base / "server.log", ARTIFACTS / f"server-{port}.log")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (its own cookies) at 1280x800; console errors are collected in
    ``page.console_errors``."""
    context = browser.new_context(viewport={"width": 1280, "height": 800},
                                  accept_downloads=True, locale="en-US")
    p = context.new_page()
    p.set_default_timeout(20_000)
    errors: list[str] = []
    p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.console_errors = errors
    try:
        yield p
    finally:
        context.close()


CAT_MEMORIES: list[dict[str, Any]] = [
    {"text": "あなたは茶トラの猫のむぎを飼っている。", "kind": "pet",
     "created_at": "2026-02-10T20:40:00+09:00"},
    {"text": "あなたの猫のむぎは毎朝7時にご飯を食べる。", "kind": "habit",
     "created_at": "2026-02-12T20:40:00+09:00"},
    {"text": "あなたはIT企業でシステムエンジニアとして働いている。", "kind": "profile",
     "created_at": "2026-01-15T20:10:00+09:00"},
    {"text": "あなたは辛い料理が好きで、麻婆豆腐には目がない。", "kind": "preference",
     "created_at": "2026-01-25T19:45:00+09:00"},
    {"text": "あなたの母は静岡に一人で住んでいる。", "kind": "person",
     "created_at": "2026-02-22T18:30:00+09:00"},
    {"text": "あなたは平日の朝、近所の公園をジョギングしている。", "kind": "habit",
     "created_at": "2026-03-01T07:30:00+09:00"},
    {"text": "あなたはゴールデンウィークに沖縄へ旅行しようと考えている。", "kind": "plan",
     "created_at": "2026-03-05T21:00:00+09:00"},
    {"text": "あなたは今度の土曜日に健太とフットサルをする予定だ。", "kind": "plan",
     "created_at": "2026-03-07T21:00:00+09:00"},
]
"""A person's memories for the search tests (the cat ones are what 「猫」 is about)."""


@pytest.fixture
def cat_memories() -> list[dict[str, Any]]:
    return [dict(m) for m in CAT_MEMORIES]


@pytest.fixture(scope="module")
def cat_memories_module() -> list[dict[str, Any]]:
    return [dict(m) for m in CAT_MEMORIES]
