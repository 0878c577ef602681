"""The contract kit: reusable test classes for plugins, and test doubles.

The contract classes import pytest, so they load only when asked for
(``from omoide.testing import VectorStoreContract``); the doubles
(:mod:`omoide.testing.doubles`) import no pytest, so a server can run them once the
omoide-test-doubles distribution (a test-only install) registers them as ``use: fake``.

Tests that call the server's management routes authenticate with
:mod:`omoide.testing.auth` (``admin_client(app)``, ``admin_headers(app)``,
``person_headers(app, user)``, ``BASE_URL``).
"""

from __future__ import annotations

from typing import Any

_CONTRACTS = {"ASRContract", "ChatModelContract", "ComponentContract", "DeviceContract",
              "EmbedderContract", "TTSContract", "ToolContract", "VADContract",
              "VectorStoreContract", "SpeakerEncoderContract",
              "assert_config_strict_and_described"}
_MEMORY_CONTRACTS = {"ExtractorContract", "MemoryEngineContract"}

__all__ = sorted([*_CONTRACTS, *_MEMORY_CONTRACTS, "PluginPackageContract"])


def __getattr__(name: str) -> Any:
    if name in _CONTRACTS:
        from omoide.testing import contracts
        return getattr(contracts, name)
    if name in _MEMORY_CONTRACTS:
        from omoide.testing import memory_contracts
        return getattr(memory_contracts, name)
    if name == "PluginPackageContract":
        from omoide.testing.package import PluginPackageContract
        return PluginPackageContract
    raise AttributeError(name)
