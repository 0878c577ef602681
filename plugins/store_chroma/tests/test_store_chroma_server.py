"""The `chroma` store against a real Chroma server (`chroma run`, started by the test)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from omoide.errors import ComponentError
from omoide.testing import VectorStoreContract
from omoide.types import EmbedderFingerprint, VectorRecord
from omoide_store_chroma.config import ChromaStoreConfig
from omoide_store_chroma.store import ChromaStore


def _chroma_binary() -> str | None:
    beside_python = Path(sys.executable).with_name("chroma")
    return str(beside_python) if beside_python.exists() else shutil.which("chroma")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A `chroma run` server on a free port; yields the port, kills the server after."""
    binary = _chroma_binary()
    if binary is None:
        pytest.skip("the `chroma` command (from the chromadb package) is not installed")
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = (data / "server.log").open("wb")
    proc = subprocess.Popen([binary, "run", "--path", str(data / "db"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).is_success:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chroma server did not come up: {(data / 'server.log').read_text()}")
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


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
                                                          "port": _free_port()}))
    with pytest.raises(ComponentError) as info:
        await store.start()
    assert info.value.retryable
    await store.stop()
