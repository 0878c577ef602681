"""FallbackEmbedder: the API embedder is used only while it answers and agrees."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from pydantic import Field

from omoide.components import Embedder, EmbedderConfig
from omoide.components.embedder_fallback import FallbackEmbedder
from omoide.errors import ComponentError, EmbedderMismatch
from omoide.testing.doubles import (
    HashEmbedder,
    HashEmbedderConfig,
    InMemoryStore,
    MemoryStoreConfig,
)
from omoide.types import EmbedPurpose, FloatArray, Priority, VectorRecord

DIMS = 64


class SkewedAPIConfig(EmbedderConfig):
    agreement: float = Field(1.0, description="Cosine of every vector to the primary's.")


class SkewedAPIDouble(Embedder):
    """A test double for an embedding API: the hash embedder's vectors turned by a fixed
    angle (cosine ``agreement``), and switchable failures."""

    name = "api_double"
    Config = SkewedAPIConfig
    stand_in = "a test double, not for real use"

    def __init__(self, config: SkewedAPIConfig) -> None:
        super().__init__(config)
        self.base = HashEmbedder(HashEmbedderConfig(dims=DIMS))
        self.agreement = config.agreement
        self.dead = False
        self.fail_start = False
        self.calls = 0
        self.hold: asyncio.Event | None = None

    @property
    def model_id(self) -> str:
        return "api-double"

    @property
    def dims(self) -> int:
        return DIMS

    async def _start(self) -> None:
        if self.fail_start:
            raise ComponentError("api double: no API key")

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        self.calls += 1
        if self.hold is not None and texts[0] == "held":
            await self.hold.wait()
        if self.dead:
            raise ComponentError("api double: HTTP 503", retryable=True)
        rows = []
        for v in await self.base.embed(texts, purpose):
            seed = int.from_bytes(hashlib.sha256(v.tobytes()).digest()[:4], "little")
            u = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
            u -= (u @ v) * v
            u /= np.linalg.norm(u)
            c = self.agreement
            rows.append(c * v + np.sqrt(1 - c * c) * u)
        return np.stack(rows).astype(np.float32)


async def eventually(condition: Callable[[], bool], seconds: float = 2.0) -> bool:
    """Let background tasks run until ``condition`` holds (or ``seconds`` pass)."""
    for _ in range(int(seconds / 0.01)):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return condition()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(agreement: float = 1.0, *, clock: Clock | None = None,
         recheck_seconds: float = 300.0) -> tuple[FallbackEmbedder, HashEmbedder,
                                                  SkewedAPIDouble]:
    primary = HashEmbedder(HashEmbedderConfig(dims=DIMS))
    api = SkewedAPIDouble(SkewedAPIConfig(agreement=agreement))
    fb = FallbackEmbedder(primary, api, min_agreement=0.99, recheck_seconds=recheck_seconds,
                          clock=clock or Clock())
    return fb, primary, api


async def test_an_agreeing_api_serves_the_calls() -> None:
    fb, _, api = make(agreement=0.999)
    await fb.start()
    vecs = await fb.embed(["箱根に行く", "ラーメンが好き"], "document")
    assert fb.using_secondary and fb.last_backend == "api_double"
    expected = await api.embed(["箱根に行く", "ラーメンが好き"], "document")
    np.testing.assert_allclose(vecs, expected, atol=1e-6)
    assert fb.last_check.agreement == pytest.approx(0.999, abs=1e-4)


async def test_a_disagreeing_api_is_never_used() -> None:
    fb, primary, api = make(agreement=0.97)
    await fb.start()
    calls_after_probe = api.calls
    vecs = await fb.embed(["箱根に行く"], "query")
    assert not fb.using_secondary and fb.last_backend == "fake"
    assert "0.97" in fb.last_check.reason
    np.testing.assert_allclose(vecs, await primary.embed(["箱根に行く"], "query"), atol=1e-6)
    assert api.calls == calls_after_probe


async def test_a_dying_api_is_replaced_by_the_primary_in_the_same_call() -> None:
    fb, primary, api = make()
    await fb.start()
    assert fb.using_secondary
    api.dead = True
    vecs = await fb.embed(["週末の予定"], "query")
    assert fb.last_backend == "fake" and not fb.using_secondary
    np.testing.assert_allclose(vecs, await primary.embed(["週末の予定"], "query"), atol=1e-6)
    calls = api.calls
    await fb.embed(["もう一度"], "query")
    assert api.calls == calls  # not asked again before the next probe


async def test_the_api_is_probed_again_after_recheck_seconds() -> None:
    clock = Clock()
    fb, _, api = make(clock=clock, recheck_seconds=300)
    api.dead = True
    await fb.start()
    assert not fb.using_secondary
    api.dead = False
    await fb.embed(["a"], "query")
    assert not fb.using_secondary          # not due yet
    clock.now += 301
    await fb.embed(["b"], "query")          # schedules the probe in the background
    assert await eventually(lambda: fb.using_secondary)
    await fb.embed(["c"], "query")
    assert fb.last_backend == "api_double"


async def test_a_periodic_probe_that_disagrees_switches_back() -> None:
    clock = Clock()
    fb, _, api = make(clock=clock)
    await fb.start()
    assert fb.using_secondary
    api.agreement = 0.97
    clock.now += 301
    await fb.embed(["x"], "document")
    assert await eventually(lambda: not fb.using_secondary)
    await fb.embed(["y"], "document")
    assert fb.last_backend == "fake"


async def test_vectors_returned_after_trust_was_withdrawn_are_discarded() -> None:
    fb, primary, api = make()
    await fb.start()
    api.hold = asyncio.Event()
    calls_before = api.calls
    call = asyncio.create_task(fb.embed(["held"], "document"))
    assert await eventually(lambda: api.calls > calls_before)
    api.agreement = 0.9
    await fb.recheck()          # trust withdrawn while the call is in flight
    api.hold.set()
    vecs = await call
    np.testing.assert_allclose(vecs, await primary.embed(["held"], "document"), atol=1e-6)
    assert fb.last_backend == "fake"


async def test_an_api_that_cannot_start_leaves_the_primary_serving() -> None:
    fb, _, api = make()
    api.fail_start = True
    await fb.start()
    assert fb.status.state.value == "ready" and not fb.using_secondary
    assert "no API key" in fb.last_check.reason
    await fb.embed(["a"], "document")
    assert fb.last_backend == "fake"


async def test_identity_is_the_primary_s() -> None:
    fb, primary, _ = make()
    await fb.start()
    assert fb.model_id == primary.model_id and fb.dims == primary.dims
    assert (await fb.fingerprint()) == (await primary.fingerprint())


def test_dims_must_match() -> None:
    primary = HashEmbedder(HashEmbedderConfig(dims=32))
    with pytest.raises(ComponentError, match="dims"):
        FallbackEmbedder(primary, SkewedAPIDouble(SkewedAPIConfig()))


async def test_a_store_filled_by_one_embedder_refuses_another() -> None:
    store = InMemoryStore(MemoryStoreConfig())
    await store.start()
    first = HashEmbedder(HashEmbedderConfig(dims=DIMS))
    await store.open(await first.fingerprint())
    vec = (await first.embed(["箱根"], "document"))[0]
    await store.upsert("alice", [VectorRecord("m1", vec, {"text": "箱根"})])
    other = SkewedAPIDouble(SkewedAPIConfig(agreement=0.97))
    with pytest.raises(EmbedderMismatch, match="reembed"):
        await store.open(await other.fingerprint())


async def test_a_store_accepts_the_fallback_while_the_api_serves() -> None:
    store = InMemoryStore(MemoryStoreConfig())
    await store.start()
    fb, primary, _ = make(agreement=0.999)
    await store.open(await primary.fingerprint())
    await fb.start()
    assert fb.using_secondary
    await store.open(await fb.fingerprint())  # same space: no mismatch
