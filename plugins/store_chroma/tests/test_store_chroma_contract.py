"""The `chroma` store passes the store and package contracts with an embedded store."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from omoide.testing import PluginPackageContract, VectorStoreContract
from omoide_store_chroma.store import ChromaStore


class TestChromaPersistent(VectorStoreContract):
    component_cls = ChromaStore

    @pytest.fixture
    def config(self, tmp_path: Path) -> dict[str, Any]:
        return {"path": str(tmp_path / "chroma")}


class TestChromaPackage(PluginPackageContract):
    plugin_name = "store_chroma"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("store", "chroma")}
