"""A person's voice recorded in the console: the consent text first, then the microphone
(chromium's fake device playing a synthetic voice), three sentences recorded, encoded
as WAV in the page and enrolled as a voiceprint."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide.audio import resample, write_wav
from omoide.types import AudioClip

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
bundled = pytest.importorskip("omoide_speaker_resemblyzer.bundled")
pyopenjtalk = pytest.importorskip("pyopenjtalk")

if bundled.cached_weights() is None and bundled.installed_weights() is None:
    pytest.skip(f"weights not prepared: {bundled.INSTALL_HINT}", allow_module_level=True)

SERVER_SPEAKER = {"use": "resemblyzer", "timeout_s": 60}
SPOKEN = ("今日はいい天気ですね。散歩に行きたいな。", "来週の土曜日に友達と箱根に行く予定です。",
          "朝ごはんはパンとコーヒーにしました。")


@pytest.fixture(scope="module")
def microphone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the fake microphone hears, looped: OpenJTalk reading three sentences."""
    parts = []
    for text in SPOKEN:
        samples, rate = pyopenjtalk.tts(text)
        clip = resample(AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate),
                        16000)
        parts += [clip.samples, np.zeros(3200, np.float32)]
    path = tmp_path_factory.mktemp("microphone") / "voice.wav"
    path.write_bytes(write_wav(AudioClip(np.concatenate(parts), 16000)))
    return path


@pytest.fixture(scope="module")
def browser(microphone: Path) -> Iterator[Any]:
    """Chromium with a fake microphone playing ``microphone`` and its permission granted."""
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--use-fake-ui-for-media-stream",
            "--use-fake-device-for-media-stream",
            f"--use-file-for-fake-audio-capture={microphone}"]
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        try:
            yield b
        finally:
            b.close()


def test_a_person_records_three_sentences_in_the_browser_and_is_enrolled(
        page: Any, omoide_server: Any) -> None:
    omoide_server.add_person("mio")
    omoide_server.sign_in(page, omoide_server.person_token("mio"))
    voices = page.locator("#voices")
    expect(voices).to_contain_text("No voiceprint")
    page.get_by_role("button", name="Record mio's voice here instead").click()
    # what is kept is said before the microphone opens
    expect(page.locator("#record-consent")).to_contain_text("keeps a voiceprint")
    expect(page.locator("#record-take")).to_be_hidden()
    page.get_by_role("button", name="I agree: record mio's voice").click()
    # "Next" before two seconds of the sentence keeps the take going
    page.locator("#record-next").click()
    expect(page.locator("#record-progress")).to_contain_text("keep reading")
    expect(page.locator("#record-sentence")).to_have_text(SPOKEN[0])
    for number in range(3):
        expect(page.locator("#record-sentence")).to_have_text(SPOKEN[number])
        page.wait_for_function(
            "document.querySelector('#record-progress').dataset.seconds >= 3.5",
            timeout=60_000)
        page.locator("#record-next").click()
    report = page.locator("#enrol-report")
    expect(report).to_contain_text("Enrolled from", timeout=60_000)
    # chromium's fake microphone may deliver a stretch of silence on a loaded machine: the
    # page then says which recording was not used, and the rest are enough to enrol
    used = re.search(r"Enrolled from (\d) recording", report.inner_text())
    assert used is not None and int(used.group(1)) >= 2, report.inner_text()
    if int(used.group(1)) < 3:
        expect(report).to_contain_text("not used: recording")
    expect(voices).to_contain_text(f"{used.group(1)} utterance(s)")
    assert omoide_server.axe_violations(page) == []
    assert page.console_errors == []
