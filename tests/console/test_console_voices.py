"""A person's voiceprint in the console: enrolled from uploaded WAV recordings (one
refused with its reason), listed, and erased; the page stays accessible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide.audio import resample, write_wav
from omoide.types import AudioClip

expect = pytest.importorskip("playwright.sync_api").expect
bundled = pytest.importorskip("omoide_speaker_resemblyzer.bundled")
pyopenjtalk = pytest.importorskip("pyopenjtalk")

if bundled.cached_weights() is None and bundled.installed_weights() is None:
    pytest.skip(f"weights not prepared: {bundled.INSTALL_HINT}", allow_module_level=True)

SERVER_SPEAKER = {"use": "resemblyzer", "timeout_s": 60}
SENTENCES = ("今日はいい天気ですね。散歩に行きたいな。", "来週の土曜日に友達と箱根に行く予定です。")


@pytest.fixture
def recordings(tmp_path: Path) -> list[Path]:
    paths = []
    for i, text in enumerate(SENTENCES):
        samples, rate = pyopenjtalk.tts(text)
        clip = resample(AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate), 16000)
        paths.append(tmp_path / f"sentence{i}.wav")
        paths[-1].write_bytes(write_wav(clip))
    paths.append(tmp_path / "silence.wav")
    paths[-1].write_bytes(write_wav(AudioClip(np.zeros(32000, np.float32), 16000)))
    return paths


def test_a_person_enrols_their_voice_from_recordings_and_erases_it(
        page: Any, omoide_server: Any, recordings: list[Path]) -> None:
    omoide_server.add_person("yui")
    omoide_server.sign_in(page, omoide_server.person_token("yui"))
    voices = page.locator("#voices")
    expect(voices).to_contain_text("No voiceprint")
    page.set_input_files("#enrol-files", [str(p) for p in recordings])
    page.get_by_role("button", name="Enrol yui's voice").click()
    report = page.locator("#enrol-report")
    expect(report).to_contain_text("Enrolled from 2 recording(s)", timeout=60_000)
    expect(report).to_contain_text("silence.wav: silence")
    expect(voices).to_contain_text("2 utterance(s)")
    assert omoide_server.axe_violations(page) == []
    page.on("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Erase the voiceprint").click()
    expect(report).to_contain_text("Erased 1 voiceprint(s).")
    expect(voices).to_contain_text("No voiceprint")
