"""The `openjtalk` TTS passes the TTS and package contracts."""

from __future__ import annotations

from typing import ClassVar

from omoide.testing import PluginPackageContract, TTSContract
from omoide_tts_openjtalk.tts import OpenJTalkTTS


class TestOpenJTalkTTS(TTSContract):
    component_cls = OpenJTalkTTS


class TestOpenJTalkPackage(PluginPackageContract):
    plugin_name = "tts_openjtalk"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("tts", "openjtalk")}
