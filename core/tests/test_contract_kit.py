"""The contract kit itself, run against the test doubles (which must pass it)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from omoide.testing import (
    ASRContract,
    ChatModelContract,
    EmbedderContract,
    PluginPackageContract,
    TTSContract,
    VADContract,
    VectorStoreContract,
)
from omoide.testing.doubles import FakeASR, FakeChat, FakeTTS, FakeVAD, HashEmbedder, InMemoryStore


class TestFakeVAD(VADContract):
    component_cls = FakeVAD


class TestFakeASR(ASRContract):
    component_cls = FakeASR


class TestHashEmbedder(EmbedderContract):
    component_cls = HashEmbedder

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {"dims": 32, "batch_size": 4}


class TestInMemoryStore(VectorStoreContract):
    component_cls = InMemoryStore


class TestFakeChat(ChatModelContract):
    component_cls = FakeChat


class TestFakeTTS(TTSContract):
    component_cls = FakeTTS


class TestTestingPluginPackage(PluginPackageContract):
    plugin_name = "testing"
    expected_components: ClassVar[set[tuple[str, str]]] = {
        (kind, "fake") for kind in ("vad", "asr", "embedder", "store", "chat", "tts", "tool")}


def test_a_store_that_leaks_across_users_fails_the_contract() -> None:
    """The isolation check can fail: a store ignoring ``user`` is caught."""
    import asyncio

    from omoide.testing.contracts import _fingerprint

    class LeakyStore(InMemoryStore):
        async def _search(self, user, vector, limit, where):  # type: ignore[no-untyped-def]
            hits = []
            for other in list(self._data):
                hits += await super()._search(other, vector, limit, where)
            return sorted(hits, key=lambda h: -h.score)[:limit]

    class Probe(VectorStoreContract):
        component_cls = LeakyStore

    async def run() -> None:
        store = LeakyStore(LeakyStore.Config())
        await store.start()
        await store.open(_fingerprint(dims=Probe.dims))
        await Probe().test_users_never_see_each_other(store)

    with pytest.raises(AssertionError):
        asyncio.run(run())


def test_a_store_whose_pages_start_over_fails_the_paging_contract() -> None:
    """The paging check can fail: a store ignoring the cursor repeats its first page."""
    import asyncio

    from omoide.components import ScrollPage
    from omoide.testing.contracts import _fingerprint

    class RestartingStore(InMemoryStore):
        async def _scroll_page(self, user, cursor, limit):  # type: ignore[no-untyped-def]
            page = await super()._scroll_page(user, None, limit)
            return ScrollPage(page.records, page.cursor)

    class Probe(VectorStoreContract):
        component_cls = RestartingStore

    async def run() -> None:
        store = RestartingStore(RestartingStore.Config())
        await store.start()
        await store.open(_fingerprint(dims=Probe.dims))
        await Probe().test_pages_return_every_record_once_and_at_most_limit_each(store)

    with pytest.raises(AssertionError):
        asyncio.run(run())
