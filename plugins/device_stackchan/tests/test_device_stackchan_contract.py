"""The StackChan device passes omoide's device and package contracts."""

from __future__ import annotations

from typing import ClassVar

from omoide.testing import DeviceContract, PluginPackageContract
from omoide_device_stackchan.device import StackChan


class TestStackChanDevice(DeviceContract):
    component_cls = StackChan


class TestStackChanPackage(PluginPackageContract):
    plugin_name = "device_stackchan"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("device", "stackchan")}


def test_secrets_must_come_from_the_environment() -> None:
    import pytest
    with pytest.raises(Exception, match="env"):
        StackChan.Config.model_validate({"token_secret": "literal-secret"})
