"""The `qdrant` store passes the store and package contracts in local mode, in memory,
and with the server's shared-collection layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from omoide.testing import PluginPackageContract, VectorStoreContract
from omoide_store_qdrant.store import QdrantStore


class TestQdrantLocalMode(VectorStoreContract):
    component_cls = QdrantStore

    @pytest.fixture
    def config(self, tmp_path: Path) -> dict[str, Any]:
        return {"path": str(tmp_path / "qdrant")}


class TestQdrantInMemory(VectorStoreContract):
    component_cls = QdrantStore

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"location": ":memory:"}


class TestQdrantSharedCollection(VectorStoreContract):
    """The server layout (one collection, a user filter in every query), run embedded."""

    component_cls = QdrantStore

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"location": ":memory:", "partition": "payload"}


class TestQdrantPackage(PluginPackageContract):
    plugin_name = "store_qdrant"
    expected_components: ClassVar[set[tuple[str, str]] | None] = {("store", "qdrant")}
