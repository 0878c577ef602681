"""The `silero` VAD passes the VAD and package contracts."""

from __future__ import annotations

from typing import ClassVar

from omoide.testing import PluginPackageContract, VADContract
from omoide_vad_silero.vad import SileroVAD


class TestSileroVAD(VADContract):
    component_cls = SileroVAD


class TestSileroPackage(PluginPackageContract):
    plugin_name = "vad_silero"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("vad", "silero")}
