"""embed_use passes the embedder and package contracts with the real USE model."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from omoide.testing import EmbedderContract, PluginPackageContract
from omoide_embed_use.embedder import USEEmbedder


class TestUSEEmbedder(EmbedderContract):
    component_cls = USEEmbedder
    trained = True
    paraphrase_margin = 0.2

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"num_threads": 2, "batch_size": 4}


class TestEmbedUsePackage(PluginPackageContract):
    plugin_name = "embed_use"
    expected_components: ClassVar[set[tuple[str, str]]] = {("embedder", "use")}
