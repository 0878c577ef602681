"""The `chroma` store against a real Chroma server (`chroma run`, started by the test)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from omoide.errors import ComponentError
from omoide.testing import VectorStoreContract
from omoide.types import EmbedderFingerprint, VectorRecord
from omoide_store_chroma.config import ChromaStoreConfig
from omoide_store_chroma.local_server import LocalChromaServer, chroma_command, free_port
from omoide_store_chroma.store import ChromaStore


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A `chroma run` server on a free port; yields the port, stops the server after."""
    if chroma_command() is None:
        pytest.skip("the `chroma` command (from the chromadb package) is not installed")
    with LocalChromaServer(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server.port


class TestChromaServer(VectorStoreContract):
    component_cls = ChromaStore

    @pytest.fixture
    def config(self, chroma_server: int, request: pytest.FixtureRequest) -> dict[str, Any]:
        # One collection per test: the server outlives each test's store.
        return {"host": "127.0.0.1", "port": chroma_server,
                "collection": f"t{abs(hash(request.node.name)) % 10**8}",
                "headers": {"X-Omoide-Test": "1"}}


async def test_records_written_over_http_survive_a_new_client(chroma_server: int) -> None:
    config = ChromaStoreConfig.model_validate({"host": "127.0.0.1", "port": chroma_server,
                                               "collection": "survives"})
    fp = EmbedderFingerprint("m", 4, "probe", (1.0, 0.0, 0.0, 0.0))
    first = ChromaStore(config)
    await first.start()
    await first.open(fp)
    await first.upsert("alice", [VectorRecord("r1", np.array([0, 1, 0, 0], np.float32),
                                              {"text": "over http"})])
    await first.stop()
    second = ChromaStore(config)
    await second.start()
    try:
        await second.open(fp)
        [hit] = await second.search("alice", np.array([0, 1, 0, 0], np.float32), limit=5)
        assert hit.id == "r1" and hit.payload == {"text": "over http"}
    finally:
        await second.stop()


async def test_an_unreachable_server_is_a_retryable_component_error() -> None:
    store = ChromaStore(ChromaStoreConfig.model_validate({"host": "127.0.0.1",
                                                          "port": free_port()}))
    with pytest.raises(ComponentError) as info:
        await store.start()
    assert info.value.retryable
    await store.stop()
