"""Enrolling voiceprints with consent, from the CLI and the HTTP API (issue 28, part 3).

Real parts: the ``omoide`` CLI in a subprocess, the real server on loopback, the real
Resemblyzer speaker stage, OpenJTalk's voice. A voiceprint belongs to its person:
listed, exported and erased with them; only the admin enrols someone else's voice.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml

from omoide.audio import resample, write_wav
from omoide.server.loopback import LoopbackOmoide, settings_from_data
from omoide.testing.auth import admin_headers, person_headers
from omoide.types import AudioClip

bundled = pytest.importorskip("omoide_speaker_resemblyzer.bundled")
pyopenjtalk = pytest.importorskip("pyopenjtalk")

pytestmark = pytest.mark.skipif(bundled.cached_weights() is None and
                                bundled.installed_weights() is None,
                                reason=f"weights not prepared: {bundled.INSTALL_HINT}")

SENTENCES = ("今日はいい天気ですね。散歩に行きたいな。",
             "来週の土曜日に友達と箱根に行く予定です。")


def spoken(text: str) -> bytes:
    samples, rate = pyopenjtalk.tts(text)
    clip = AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate)
    return write_wav(resample(clip, 16000))


def config_data(data_dir: Path) -> dict[str, Any]:
    return yaml.safe_load(f"""
server: {{data_dir: {data_dir}}}
memory: {{extraction: {{on_disconnect: false}}}}
speaker: {{use: resemblyzer, timeout_s: 60}}
asr: {{use: fake}}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake}}
tts: {{use: fake}}
""")


@pytest.fixture
def wavs(tmp_path: Path) -> list[Path]:
    paths = []
    for i, text in enumerate(SENTENCES):
        path = tmp_path / f"s{i}.wav"
        path.write_bytes(spoken(text))
        paths.append(path)
    silence = tmp_path / "silence.wav"
    silence.write_bytes(write_wav(AudioClip(np.zeros(32000, np.float32), 16000)))
    return [*paths, silence]


def test_the_cli_enrols_lists_exports_and_erases_a_voice(
        omoide_cli: Any, tmp_path: Path, wavs: list[Path]) -> None:
    config = tmp_path / "omoide.yaml"
    config.write_text(yaml.safe_dump(config_data(tmp_path / "data"), allow_unicode=True))
    enrolled = omoide_cli("voices", "enrol", "--config", str(config), "alice",
                          *map(str, wavs))
    assert enrolled.returncode == 0, enrolled.stderr
    assert "enrolled alice: 2 utterance(s)" in enrolled.stdout
    assert "silence.wav: not used (silence)" in enrolled.stderr
    listed = omoide_cli("voices", "list", "--config", str(config), "--json")
    [row] = json.loads(listed.stdout)["voiceprints"]
    assert row["person"] == "alice" and row["utterances"] == 2 and "vectors" not in row
    exported = json.loads(omoide_cli("voices", "export", "--config", str(config),
                                     "alice").stdout)
    [voiceprint] = exported["voiceprints"]
    assert len(voiceprint["vectors"]) == 2 and len(voiceprint["vectors"][0]) == 256
    erased = omoide_cli("voices", "erase", "--config", str(config), "alice")
    assert "erased 1 voiceprint(s) of alice" in erased.stdout
    assert not (tmp_path / "data" / "voices" / "alice.json").exists()
    assert "no one is enrolled" in omoide_cli("voices", "list", "--config",
                                              str(config)).stdout


@pytest.fixture
async def omoide(tmp_path: Path) -> AsyncIterator[LoopbackOmoide]:
    server = LoopbackOmoide(settings_from_data(config_data(tmp_path / "data")))
    await server.start(ready_timeout_s=120)
    try:
        yield server
    finally:
        await server.stop()


async def test_a_person_enrols_their_own_voice_and_only_the_admin_anothers(
        omoide: LoopbackOmoide, tmp_path: Path) -> None:
    data = tmp_path / "data"
    body = {"wavs": [base64.b64encode(spoken(t)).decode() for t in SENTENCES]}
    async with httpx.AsyncClient(base_url=omoide.url, timeout=120) as client:
        refused = await client.post("/v1/users/alice/voices", json=body,
                                    headers=person_headers(data, "bob"))
        own = await client.post("/v1/users/bob/voices", json=body,
                                headers=person_headers(data, "bob"))
        by_admin = await client.post("/v1/users/alice/voices", json=body,
                                     headers=admin_headers(data))
        listed = await client.get("/v1/users/bob/voices", headers=person_headers(data, "bob"))
        exported = await client.get("/v1/users/alice/voices/export",
                                    headers=person_headers(data, "bob"))
        erased = await client.delete("/v1/users/bob/voices",
                                     headers=person_headers(data, "bob"))
    assert refused.status_code == 403 and exported.status_code == 403
    assert own.status_code == 200 and own.json()["used"] == 2
    assert by_admin.status_code == 200
    [voiceprint] = listed.json()["voiceprints"]
    assert voiceprint["source"] == "api" and "vectors" not in voiceprint
    assert erased.json()["erased"] == 1
