"""Contract test classes, one per component kind, for plugins to subclass.

Usage in a plugin's tests::

    from omoide.testing import VectorStoreContract

    class TestQdrantLocal(VectorStoreContract):
        component_cls = QdrantStore

        @pytest.fixture
        def config(self, tmp_path):
            return {"path": str(tmp_path)}

Every contract needs ``component_cls`` and a ``config`` fixture (a dict of options,
as they would appear in YAML under ``use:``). A capability the component lacks is a
skip with a reason, never a failure. The classes are not named ``Test*`` so pytest
collects them only through subclasses.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np
import pytest
from pydantic import BaseModel

from omoide.components import (
    ASR,
    TTS,
    VAD,
    ChatModel,
    Component,
    Device,
    Embedder,
    RecognitionContext,
    SpeakerEncoder,
    SpeakerReason,
    Tool,
    ToolContext,
    ToolError,
    VectorStore,
)
from omoide.errors import EmbedderMismatch, InvalidInput
from omoide.types import AudioClip, ChatMessage, EmbedderFingerprint, VectorRecord


def assert_config_strict_and_described(config_cls: type[BaseModel]) -> None:
    """Every field has a description, and unknown keys are rejected."""
    undocumented = [name for name, f in config_cls.model_fields.items() if not f.description]
    assert not undocumented, f"{config_cls.__name__}: fields without description: {undocumented}"
    assert config_cls.model_config.get("extra") == "forbid", \
        f"{config_cls.__name__} must forbid unknown keys (extra='forbid')"


class ComponentContract:
    """Checks every component kind shares: naming, strict config, cheap construction."""

    component_cls: ClassVar[type[Component]]  # type: ignore[type-arg]

    @pytest.fixture
    def config(self) -> dict[str, Any]:
        return {}

    @pytest.fixture
    async def component(self, config: dict[str, Any]) -> AsyncIterator[Any]:
        comp = self.component_cls(self.component_cls.Config.model_validate(config))
        await comp.start()
        try:
            yield comp
        finally:
            await comp.stop()

    def test_has_a_name(self) -> None:
        assert isinstance(self.component_cls.name, str) and self.component_cls.name

    def test_config_is_strict_and_described(self) -> None:
        assert_config_strict_and_described(self.component_cls.Config)

    def test_config_rejects_unknown_keys(self, config: dict[str, Any]) -> None:
        with pytest.raises(Exception) as info:
            self.component_cls.Config.model_validate({**config, "no_such_setting": 1})
        assert "no_such_setting" in str(info.value)

    def test_construction_is_cheap_and_does_not_start(self, config: dict[str, Any]) -> None:
        comp = self.component_cls(self.component_cls.Config.model_validate(config))
        assert comp.status.state.value == "created"

    async def test_start_makes_it_ready(self, component: Component) -> None:  # type: ignore[type-arg]
        assert component.status.state.value == "ready"


class VADContract(ComponentContract):
    component_cls: ClassVar[type[VAD]]

    async def test_silence_has_low_probability(self, component: VAD) -> None:
        state = component.new_state()
        frame = np.zeros(component.frame_samples, dtype=np.float32)
        probs = [component.speech_probability(frame, state) for _ in range(10)]
        assert max(probs) < component.config.threshold

    async def test_wrong_frame_size_is_invalid_input(self, component: VAD) -> None:
        with pytest.raises(InvalidInput):
            component.speech_probability(np.zeros(7, dtype=np.float32), component.new_state())

    async def test_detector_reports_nothing_for_silence(self, component: VAD) -> None:
        detector = component.new_detector()
        events = detector.push(np.zeros(component.sample_rate * 2, dtype=np.float32))
        assert events == []


class ASRContract(ComponentContract):
    component_cls: ClassVar[type[ASR]]

    @pytest.fixture
    def speech(self) -> AudioClip:
        """Override with a real utterance when the ASR can be checked for content."""
        t = np.arange(16000, dtype=np.float32) / 16000
        return AudioClip((0.1 * np.sin(2 * math.pi * 220 * t)).astype(np.float32), 16000)

    async def test_transcribes_to_a_string(self, component: ASR, speech: AudioClip) -> None:
        result = await component.transcribe(speech)
        assert isinstance(result.text, str)

    async def test_empty_audio_is_invalid_input(self, component: ASR) -> None:
        with pytest.raises(InvalidInput):
            await component.transcribe(AudioClip(np.zeros(0, dtype=np.float32), 16000))

    async def test_other_sample_rates_are_resampled(self, component: ASR,
                                                    speech: AudioClip) -> None:
        from omoide.audio import resample
        result = await component.transcribe(resample(speech, 48000))
        assert isinstance(result.text, str)

    async def test_overlong_audio_is_refused(self, component: ASR) -> None:
        seconds = component.config.max_seconds + 1
        clip = AudioClip(np.zeros(int(seconds * 8000), dtype=np.float32), 8000)
        with pytest.raises(InvalidInput):
            await component.transcribe(clip)

    async def test_a_recognition_context_is_accepted(self, component: ASR,
                                                     speech: AudioClip) -> None:
        context = RecognitionContext.of(["箱根", "スタックチャン", "ゆき"])
        result = await component.transcribe(speech, context)
        assert isinstance(result.text, str)

    async def test_silence_with_a_context_does_not_echo_the_vocabulary(
            self, component: ASR) -> None:
        """A biased recogniser must not "hear" its vocabulary in silence (a prompt that
        leaks into the transcript would put words in the person's mouth)."""
        words = ["箱根", "スタックチャン", "ゆき"]
        silence = AudioClip(np.zeros(16000, dtype=np.float32), 16000)
        result = await component.transcribe(silence, RecognitionContext.of(words))
        assert not any(w in result.text for w in words)

    # -- the stream: every recogniser has one (the default buffers and transcribes) -------
    async def test_a_stream_fed_in_frames_gives_a_transcript(self, component: ASR,
                                                            speech: AudioClip) -> None:
        """Streaming or not, a stream fed 60 ms frames gives a transcript at finish; a
        recogniser that does not stream gives exactly what ``transcribe`` gives."""
        stream = component.open_stream(sample_rate=speech.sample_rate)
        for frame in audio_frames(speech, 0.06):
            stream.feed(frame)
        result = await stream.finish()
        assert isinstance(result.text, str)
        if not component.capabilities.streaming:
            assert result == await component.transcribe(speech)
            assert stream.stable_text == ""

    async def test_a_stream_at_another_rate_is_resampled(self, component: ASR,
                                                         speech: AudioClip) -> None:
        from omoide.audio import resample
        clip = resample(speech, 48000)
        stream = component.open_stream(sample_rate=48000)
        for frame in audio_frames(clip, 0.06):
            stream.feed(frame)
        assert isinstance((await stream.finish()).text, str)

    async def test_stable_partials_only_grow_and_end_with_the_stream(
            self, component: ASR, speech: AudioClip) -> None:
        import asyncio
        stream = component.open_stream(sample_rate=speech.sample_rate)
        seen: list[str] = []

        async def read() -> None:
            async for text in stream.partials():
                seen.append(text)

        reader = asyncio.create_task(read())
        for frame in audio_frames(speech, 0.06):
            stream.feed(frame)
            await asyncio.sleep(0)
        await stream.finish()
        await asyncio.wait_for(reader, 10)
        assert all(b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(seen))

    async def test_finishing_a_stream_without_audio_is_invalid_input(
            self, component: ASR) -> None:
        with pytest.raises(InvalidInput):
            await component.open_stream().finish()

    async def test_a_stream_past_max_seconds_is_refused(self, component: ASR) -> None:
        stream = component.open_stream(sample_rate=8000)
        second = np.zeros(8000, dtype=np.float32)
        with pytest.raises(InvalidInput, match="longer than"):
            for _ in range(int(component.config.max_seconds) + 2):
                stream.feed(second)
        with pytest.raises(InvalidInput, match="longer than"):
            await stream.finish()

    async def test_non_finite_samples_refuse_the_stream(self, component: ASR) -> None:
        stream = component.open_stream()
        with pytest.raises(InvalidInput, match="NaN"):
            stream.feed(np.array([0.0, np.nan], dtype=np.float32))
        with pytest.raises(InvalidInput):
            await stream.finish()

    async def test_a_cancelled_stream_takes_no_more_audio(self, component: ASR,
                                                          speech: AudioClip) -> None:
        async with component.open_stream(sample_rate=speech.sample_rate) as stream:
            stream.feed(speech.samples[: speech.sample_rate // 2])
        assert stream.closed
        with pytest.raises(InvalidInput):
            stream.feed(speech.samples)


def audio_frames(clip: AudioClip, seconds: float) -> list[np.ndarray]:
    """``clip`` cut in frames of ``seconds`` (the last one shorter), as a device sends it."""
    step = max(1, int(clip.sample_rate * seconds))
    return [clip.samples[i:i + step] for i in range(0, clip.samples.size, step)]


class EmbedderContract(ComponentContract):
    """Shape, norm, batching and identity for every embedder; retrieval quality for
    those with trained weights (set ``trained = True``)."""

    component_cls: ClassVar[type[Embedder]]
    trained: ClassVar[bool] = False
    """True when the embedder has real weights, which adds the Japanese quality checks."""
    paraphrase_margin: ClassVar[float] = 0.03
    """How much closer a paraphrase must score than an unrelated sentence (model scale)."""

    async def test_vectors_have_dims_and_unit_norm(self, component: Embedder) -> None:
        vecs = await component.embed(["今日はいい天気", "hello world"], "document")
        assert vecs.shape == (2, component.dims)
        assert vecs.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)

    async def test_same_text_same_vector(self, component: Embedder) -> None:
        a = await component.embed(["箱根に行く"], "document")
        b = await component.embed(["箱根に行く"], "document")
        np.testing.assert_allclose(a, b, atol=1e-5)

    async def test_batches_match_single_calls(self, component: Embedder) -> None:
        texts = [f"文{i}: ラーメンが好き" for i in range(component.config.batch_size + 3)]
        batch = await component.embed(texts, "document")
        single = np.stack([(await component.embed([t], "document"))[0] for t in texts[:3]])
        np.testing.assert_allclose(batch[:3], single, atol=2e-3)

    async def test_queries_asked_together_get_the_vectors_they_get_alone(
            self, component: Embedder) -> None:
        import asyncio

        texts = ["週末の予定覚えてる?", "猫の名前なんだっけ", "箱根っていつ行くんだっけ",
                 "私の好きなケーキ覚えてる?", "明日の待ち合わせ何時だっけ"]
        together = await asyncio.gather(*(component.embed_query(t) for t in texts))
        for text, vector in zip(texts, together, strict=True):
            alone = (await component.embed([text], "query"))[0]
            assert vector.shape == (component.dims,)
            assert float(vector @ alone) > 0.999

    async def test_empty_input_gives_empty_array(self, component: Embedder) -> None:
        assert (await component.embed([], "query")).shape == (0, component.dims)

    async def test_a_japanese_paraphrase_scores_higher_than_an_unrelated_sentence(
            self, component: Embedder) -> None:
        if not self.trained:
            pytest.skip("random or test-double weights: no retrieval quality to check")
        v = await component.embed(["来週の土曜日に友達と箱根に行くんだ",
                                   "あなたは来週の土曜日に友達と箱根へ旅行する予定だ。",
                                   "最近、仕事の後にギターを練習している。"], "document")
        assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + self.paraphrase_margin

    async def test_a_recall_question_finds_the_matching_memory(
            self, component: Embedder) -> None:
        if not self.trained:
            pytest.skip("random or test-double weights: no retrieval quality to check")
        memories = await component.embed(
            ["あなたは来週の土曜日（2026年10月3日）に友達と箱根に行く予定だ。",
             "あなたは駅前の新しい店のみそラーメンが好きだ。",
             "あなたは最近仕事の後にギターを練習している。"], "document")
        query = await component.embed_query("箱根に行くのはいつだっけ")
        assert int(np.argmax(memories @ query)) == 0

    async def test_fingerprint_names_model_and_dims(self, component: Embedder) -> None:
        fp = await component.fingerprint()
        assert fp.model == component.model_id and fp.dims == component.dims
        assert fp.agreement(await component.fingerprint()) > 0.999


def _unit(rng: np.random.Generator, dims: int) -> np.ndarray:
    v = rng.standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


def _fingerprint(model: str = "contract-model", dims: int = 8, seed: int = 0
                 ) -> EmbedderFingerprint:
    vec = _unit(np.random.default_rng(seed), dims)
    return EmbedderFingerprint(model, dims, "probe", tuple(float(x) for x in vec))


class VectorStoreContract(ComponentContract):
    """Stores: round trips, cosine order, per-user isolation, the embedder guard."""

    component_cls: ClassVar[type[VectorStore]]
    dims: ClassVar[int] = 8
    isolation_records: ClassVar[int] = 120
    """Records per user in the isolation test (both users share ids, vectors, texts)."""

    @pytest.fixture
    async def opened(self, component: VectorStore) -> VectorStore:
        await component.open(_fingerprint(dims=self.dims))
        return component

    def _records(self, n: int, seed: int = 1, text: str = "m") -> list[VectorRecord]:
        rng = np.random.default_rng(seed)
        return [VectorRecord(str(uuid.uuid4()), _unit(rng, self.dims),
                             {"text": f"{text}{i}", "n": i}) for i in range(n)]

    async def test_upsert_then_get_round_trips(self, opened: VectorStore) -> None:
        recs = self._records(3)
        await opened.upsert("alice", recs)
        got = {r.id: r for r in await opened.get("alice", [r.id for r in recs])}
        assert set(got) == {r.id for r in recs}
        for r in recs:
            assert got[r.id].payload["text"] == r.payload["text"]
            np.testing.assert_allclose(got[r.id].vector, r.vector, atol=1e-4)

    async def test_search_orders_by_cosine(self, opened: VectorStore) -> None:
        recs = self._records(10)
        await opened.upsert("alice", recs)
        hits = await opened.search("alice", recs[4].vector, limit=3)
        assert hits[0].id == recs[4].id
        assert hits[0].score == pytest.approx(1.0, abs=1e-3)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    async def test_users_never_see_each_other(self, opened: VectorStore) -> None:
        alice, bob = self._records(5, seed=2, text="a"), self._records(5, seed=2, text="b")
        bob = [VectorRecord(str(uuid.uuid4()), r.vector, r.payload) for r in bob]
        await opened.upsert("alice", alice)
        await opened.upsert("bob", bob)
        for hit in await opened.search("alice", alice[0].vector, limit=10):
            assert hit.payload["text"].startswith("a")
        assert await opened.get("bob", [r.id for r in alice]) == []
        assert {r.id for r in await opened.scroll("bob")} == {r.id for r in bob}
        await opened.delete("bob", [alice[0].id])
        assert await opened.count("alice") == 5

    async def test_delete_removes(self, opened: VectorStore) -> None:
        recs = self._records(4)
        await opened.upsert("alice", recs)
        await opened.delete("alice", [recs[0].id])
        assert await opened.count("alice") == 3
        assert await opened.get("alice", [recs[0].id]) == []

    async def test_where_filters_on_payload(self, opened: VectorStore) -> None:
        if not opened.capabilities.filters:
            pytest.skip(f"{self.component_cls.name} has no payload filters")
        recs = self._records(6)
        await opened.upsert("alice", recs)
        hits = await opened.search("alice", recs[0].vector, limit=6, where={"n": 3})
        assert [h.payload["n"] for h in hits] == [3]

    async def test_identical_records_of_two_users_stay_apart_at_high_limits(
            self, opened: VectorStore) -> None:
        rng = np.random.default_rng(5)
        vectors = [_unit(rng, self.dims) for _ in range(self.isolation_records)]
        for user in ("alice", "bob"):
            # same ids, vectors and texts for both users: only the store keeps them apart
            await opened.upsert(user, [VectorRecord(f"m{i}", v, {"text": f"t{i}",
                                                                 "owner": user})
                                       for i, v in enumerate(vectors)])
        for user in ("alice", "bob"):
            for q in vectors[:10]:
                hits = await opened.search(user, q, limit=10 * self.isolation_records)
                assert len(hits) == self.isolation_records
                assert {h.payload["owner"] for h in hits} == {user}
            assert await opened.count(user) == self.isolation_records
            assert {r.payload["owner"] for r in await opened.scroll(user)} == {user}

    async def test_one_record_id_used_by_two_users_is_two_records(
            self, opened: VectorStore) -> None:
        rng = np.random.default_rng(1)
        await opened.upsert("alice", [VectorRecord("shared-id", _unit(rng, self.dims),
                                                   {"text": "alice's"})])
        await opened.upsert("bob", [VectorRecord("shared-id", _unit(rng, self.dims),
                                                 {"text": "bob's"})])
        [alice] = await opened.get("alice", ["shared-id"])
        assert alice.payload == {"text": "alice's"}
        await opened.delete("bob", ["shared-id"])
        assert [r.payload["text"] for r in await opened.get("alice", ["shared-id"])] \
            == ["alice's"]
        assert await opened.get("bob", ["shared-id"]) == []

    async def test_payloads_round_trip_even_with_keys_like_internal_fields(
            self, opened: VectorStore) -> None:
        payload = {"user": "someone else", "id": 7, "payload": {"nested": [1, {"b": None}]},
                   "tags": [], "note": None, "text": "x"}
        vector = _unit(np.random.default_rng(2), self.dims)
        await opened.upsert("alice", [VectorRecord("r1", vector, payload)])
        [got] = await opened.get("alice", ["r1"])
        assert got.id == "r1" and got.payload == payload
        assert await opened.count("someone else") == 0

    async def test_scores_are_cosine_similarities(self, opened: VectorStore) -> None:
        rng = np.random.default_rng(8)
        vectors = [_unit(rng, self.dims) for _ in range(5)]
        await opened.upsert("alice", [VectorRecord(f"r{i}", v, {})
                                      for i, v in enumerate(vectors)])
        expected = {f"r{i}": float(v @ vectors[0]) for i, v in enumerate(vectors)}
        for hit in await opened.search("alice", vectors[0], limit=5):
            assert hit.score == pytest.approx(expected[hit.id], abs=1e-4)

    async def test_where_matches_strings_bools_and_floats(self, opened: VectorStore) -> None:
        if not opened.capabilities.filters:
            pytest.skip(f"{self.component_cls.name} has no payload filters")
        rng = np.random.default_rng(3)
        a, b = _unit(rng, self.dims), _unit(rng, self.dims)
        await opened.upsert("alice", [
            VectorRecord("a", a, {"kind": "plan", "done": False, "w": 0.5}),
            VectorRecord("b", b, {"kind": "fact", "done": True, "w": 1.5})])

        async def ids(where: dict[str, Any]) -> list[str]:
            return [h.id for h in await opened.search("alice", a, limit=10, where=where)]

        assert await ids({"kind": "fact"}) == ["b"]
        assert await ids({"done": False}) == ["a"]
        assert await ids({"w": 1.5}) == ["b"]
        assert await ids({"kind": "plan", "done": True}) == []

    async def _read_pages(self, store: VectorStore, user: str, limit: int,
                          ) -> list[list[VectorRecord]]:
        pages: list[list[VectorRecord]] = []
        cursor: str | None = None
        while True:
            page = await store.scroll_page(user, cursor, limit)
            pages.append(page.records)
            if page.cursor is None:
                return pages
            assert len(pages) <= 1000, "scroll_page never ended"
            cursor = page.cursor

    async def test_pages_return_every_record_once_and_at_most_limit_each(
            self, opened: VectorStore) -> None:
        recs = self._records(23, seed=4)
        await opened.upsert("alice", recs)
        await opened.upsert("bob", self._records(9, seed=5, text="b"))
        pages = await self._read_pages(opened, "alice", 5)
        assert all(len(p) <= 5 for p in pages)
        ids = [r.id for p in pages for r in p]
        assert sorted(ids) == sorted(r.id for r in recs)
        by_id = {r.id: r for p in pages for r in p}
        for r in recs:
            assert by_id[r.id].payload == r.payload
            np.testing.assert_allclose(by_id[r.id].vector, r.vector, atol=1e-4)

    async def test_a_page_larger_than_the_records_is_the_last(self, opened: VectorStore) -> None:
        recs = self._records(4, seed=6)
        await opened.upsert("alice", recs)
        page = await opened.scroll_page("alice", None, 50)
        assert page.cursor is None
        assert {r.id for r in page.records} == {r.id for r in recs}

    async def test_a_person_without_records_has_one_empty_last_page(
            self, opened: VectorStore) -> None:
        await opened.upsert("bob", self._records(3, seed=7))
        page = await opened.scroll_page("alice", None, 10)
        assert page.records == [] and page.cursor is None

    async def test_pages_keep_to_their_person(self, opened: VectorStore) -> None:
        for user in ("alice", "bob"):
            await opened.upsert(user, [VectorRecord(f"m{i}", r.vector, {"owner": user})
                                       for i, r in enumerate(self._records(12, seed=8))])
        for user in ("alice", "bob"):
            pages = await self._read_pages(opened, user, 4)
            assert {r.payload["owner"] for p in pages for r in p} == {user}
            assert sum(len(p) for p in pages) == 12

    async def test_records_deleted_during_a_scan_do_not_hide_the_others(
            self, opened: VectorStore) -> None:
        recs = self._records(12, seed=9)
        await opened.upsert("alice", recs)
        first = await opened.scroll_page("alice", None, 4)
        seen = {r.id for r in first.records}
        await opened.delete("alice", [r.id for r in recs if r.id in seen][:2])
        cursor = first.cursor
        while cursor is not None:
            page = await opened.scroll_page("alice", cursor, 4)
            seen |= {r.id for r in page.records}
            cursor = page.cursor
        assert seen == {r.id for r in recs}

    async def test_a_page_limit_below_one_is_invalid_input(self, opened: VectorStore) -> None:
        with pytest.raises(InvalidInput):
            await opened.scroll_page("alice", None, 0)

    async def test_a_different_embedder_is_refused(self, opened: VectorStore) -> None:
        with pytest.raises(EmbedderMismatch, match="reembed"):
            await opened.open(_fingerprint(model="other-model", dims=self.dims))
        with pytest.raises(EmbedderMismatch):
            await opened.open(_fingerprint(dims=self.dims, seed=99))

    async def test_the_same_embedder_reopens(self, opened: VectorStore) -> None:
        await opened.open(_fingerprint(dims=self.dims))
        fp = await opened.fingerprint()
        assert fp is not None and fp.model == "contract-model"


class ChatModelContract(ComponentContract):
    component_cls: ClassVar[type[ChatModel]]

    async def test_streams_text(self, component: ChatModel) -> None:
        pieces = [d.text async for d in component.stream(
            [ChatMessage("system", "Answer briefly."), ChatMessage("user", "こんにちは")])]
        assert "".join(pieces).strip()

    async def test_complete_joins_the_stream(self, component: ChatModel) -> None:
        text = await component.complete([ChatMessage("user", "こんにちは")])
        assert isinstance(text, str) and text


class TTSContract(ComponentContract):
    component_cls: ClassVar[type[TTS]]

    async def test_speaks_a_sentence(self, component: TTS) -> None:
        clip = await component.synthesize("こんにちは、元気ですか。")
        assert clip.sample_rate > 0 and clip.duration_s > 0.2
        assert clip.samples.dtype == np.float32
        assert float(np.abs(clip.samples).max()) <= 1.0

    async def test_empty_text_is_invalid_input(self, component: TTS) -> None:
        with pytest.raises(InvalidInput):
            await component.synthesize("   ")


class ToolContract(ComponentContract):
    """Tools: well-formed functions, the core's call checks, JSON results.

    Besides ``config``, a subclass may override ``host`` (a :class:`ToolHost`, by
    default a :class:`omoide.testing.doubles.ToolHostDouble` in ``tmp_path``) and
    ``sample_calls`` (``{function: arguments}`` that must succeed and return JSON).
    """

    component_cls: ClassVar[type[Tool]]

    @pytest.fixture
    def host(self, tmp_path: Any) -> Any:
        from omoide.testing.doubles import ToolHostDouble
        return ToolHostDouble(tmp_path / "tool-data")

    @pytest.fixture
    def sample_calls(self) -> dict[str, dict[str, Any]]:
        return {}

    @pytest.fixture
    async def component(self, config: dict[str, Any], host: Any) -> AsyncIterator[Any]:
        comp = self.component_cls(self.component_cls.Config.model_validate(config))
        comp.attach(host)
        await comp.start()
        try:
            yield comp
        finally:
            await comp.stop()

    @staticmethod
    def context(user: str = "alice", *, confirmed: bool = False) -> ToolContext:
        return ToolContext(user, datetime.now(UTC), "Asia/Tokyo", confirmed=confirmed)

    async def test_functions_are_well_formed(self, component: Tool) -> None:
        import re
        names = [fn.name for fn in component.functions()]
        assert len(names) == len(set(names)), f"function names repeat: {names}"
        for fn in component.functions():
            assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", fn.name), fn.name
            assert fn.description.strip(), f"{fn.name} has no description"
            assert fn.parameters.get("type") == "object", \
                f"{fn.name}: parameters must be a JSON schema of an object"

    async def test_an_unknown_function_is_a_tool_error(self, component: Tool) -> None:
        with pytest.raises(ToolError):
            await component.invoke("no_such_function", {}, self.context())

    async def test_arguments_must_be_an_object(self, component: Tool) -> None:
        for fn in component.functions():
            if not fn.needs_confirmation:
                with pytest.raises(ToolError):
                    await component.invoke(fn.name, ["not", "an", "object"],  # type: ignore[arg-type]
                                           self.context())
                return
        pytest.skip("every function needs confirmation")

    async def test_a_function_that_needs_confirmation_does_not_run_unconfirmed(
            self, component: Tool) -> None:
        asking = [fn for fn in component.functions() if fn.needs_confirmation]
        if not asking:
            pytest.skip(f"{self.component_cls.name} has no function that needs confirmation")
        for fn in asking:
            with pytest.raises(ToolError, match="confirmation"):
                await component.invoke(fn.name, {}, self.context())

    async def test_sample_calls_return_json(self, component: Tool,
                                            sample_calls: dict[str, dict[str, Any]]) -> None:
        if not sample_calls:
            pytest.skip("no sample_calls given")
        import json
        for function, arguments in sample_calls.items():
            value = await component.invoke(function, arguments, self.context())
            if not isinstance(value, str):
                json.dumps(value, allow_nan=False)


class DeviceContract(ComponentContract):
    component_cls: ClassVar[type[Device]]

    async def test_contributes_routes(self, component: Device, tmp_path: Any) -> None:
        from omoide.testing.doubles import DeviceHostDouble
        router = component.router(DeviceHostDouble(tmp_path))
        assert router.routes


def now_utc() -> datetime:
    return datetime.now(UTC)


__all__ = ["ASRContract", "ChatModelContract", "ComponentContract", "DeviceContract",
           "EmbedderContract", "TTSContract", "ToolContract", "VADContract",
           "VectorStoreContract",
           "assert_config_strict_and_described"]


class SpeakerEncoderContract(ComponentContract):
    """A speaker encoder's promises. Subclasses give ``voices``: at least two voices,
    each with at least three utterances of 2-5 s (16 kHz or any rate), the first voice's
    sounding unlike the second's to this encoder. Without them the tests that need a
    voice skip."""

    component_cls: ClassVar[type[SpeakerEncoder]]

    @pytest.fixture
    def voices(self) -> dict[str, list[AudioClip]]:
        pytest.skip("no voices given: override the `voices` fixture with real speech")

    @staticmethod
    def _first_two(voices: dict[str, list[AudioClip]]) -> tuple[list[AudioClip],
                                                                   list[AudioClip]]:
        (_, a), (_, b) = list(voices.items())[:2]
        return a, b

    async def test_silence_is_unknown_with_its_reason(self, component: SpeakerEncoder) -> None:
        embedding = await component.embed(AudioClip(np.zeros(32000, np.float32), 16000))
        assert embedding.vector is None and embedding.reason is SpeakerReason.SILENCE
        who = component.identify(embedding, {"alice": [np.ones(component.dims, np.float32)]})
        assert who.person is None and who.reason is SpeakerReason.SILENCE

    async def test_a_short_cough_is_too_short(self, component: SpeakerEncoder) -> None:
        """0.3 s of loud noise in 2 s of near-silence: too little voice to tell anyone."""
        rng = np.random.default_rng(3)
        audio = (rng.standard_normal(32000) * 1e-4).astype(np.float32)
        audio[16000:20800] += (rng.standard_normal(4800) * 0.2).astype(np.float32)
        embedding = await component.embed(AudioClip(audio, 16000))
        assert embedding.reason is SpeakerReason.TOO_SHORT
        assert 0.2 <= embedding.quality.voiced_s <= 0.4

    async def test_empty_or_non_finite_audio_is_invalid_input(
            self, component: SpeakerEncoder) -> None:
        with pytest.raises(InvalidInput):
            await component.embed(AudioClip(np.zeros(0, np.float32), 16000))
        bad = np.zeros(16000, np.float32)
        bad[5] = np.nan
        with pytest.raises(InvalidInput):
            await component.embed(AudioClip(bad, 16000))

    async def test_a_voice_gives_a_unit_vector_and_its_quality(
            self, component: SpeakerEncoder, voices: dict[str, list[AudioClip]]) -> None:
        clip = self._first_two(voices)[0][0]
        embedding = await component.embed(clip)
        assert embedding.usable and embedding.vector is not None
        assert embedding.vector.shape == (component.dims,)
        assert abs(float(np.linalg.norm(embedding.vector)) - 1) < 1e-4
        assert embedding.model_id == component.model_id
        assert 1.0 <= embedding.quality.voiced_s <= clip.duration_s + 1e-6
        assert embedding.quality.clipped_fraction == 0
        assert -60 < embedding.quality.level_dbfs < 0

    async def test_the_same_clip_gives_the_same_vector(
            self, component: SpeakerEncoder, voices: dict[str, list[AudioClip]]) -> None:
        clip = self._first_two(voices)[0][0]
        first, again = await component.embed(clip), await component.embed(clip)
        assert first.vector is not None and again.vector is not None
        assert float(first.vector @ again.vector) > 0.9999

    async def test_another_rate_and_a_quieter_copy_stay_close(
            self, component: SpeakerEncoder, voices: dict[str, list[AudioClip]]) -> None:
        from omoide.audio import resample

        clip = self._first_two(voices)[0][0]
        base = (await component.embed(clip)).vector
        quieter = AudioClip((clip.samples * 0.2).astype(np.float32), clip.sample_rate)
        for variant in (resample(clip, 48000), quieter):
            vector = (await component.embed(variant)).vector
            assert base is not None and vector is not None
            assert float(base @ vector) > 0.95

    async def test_clipped_audio_is_unknown(
            self, component: SpeakerEncoder, voices: dict[str, list[AudioClip]]) -> None:
        clip = self._first_two(voices)[0][0]
        loud = np.clip(clip.samples * 50, -1, 1).astype(np.float32)
        embedding = await component.embed(AudioClip(loud, clip.sample_rate))
        assert embedding.reason is SpeakerReason.CLIPPED
        assert embedding.quality.clipped_fraction > 0.01
        enrolled = {"alice": [(await component.embed(c)).vector for c in voices[
            next(iter(voices))][1:]]}
        assert component.identify(embedding, enrolled).person is None  # type: ignore[arg-type]

    async def test_enrolled_voices_are_told_apart(
            self, component: SpeakerEncoder, voices: dict[str, list[AudioClip]]) -> None:
        """Enrolled with all but their last utterance, each of two people is identified
        by their last one."""
        a, b = self._first_two(voices)
        enrolled = {"alice": [(await component.embed(c)).vector for c in a[:-1]],
                    "bob": [(await component.embed(c)).vector for c in b[:-1]]}
        for person, clip in (("alice", a[-1]), ("bob", b[-1])):
            who = component.identify(await component.embed(clip), enrolled)  # type: ignore[arg-type]
            assert (who.person, who.reason) == (person, SpeakerReason.MATCHED), who
            assert who.score >= component.config.threshold
            assert who.margin >= component.config.margin

    async def test_a_voice_no_one_enrolled_is_nobody(
            self, component: SpeakerEncoder, voices: dict[str, list[AudioClip]]) -> None:
        a, b = self._first_two(voices)
        enrolled = {"alice": [(await component.embed(c)).vector for c in a]}
        who = component.identify(await component.embed(b[-1]), enrolled)  # type: ignore[arg-type]
        assert who.person is None and who.reason is SpeakerReason.NO_MATCH

    async def test_two_voices_in_one_clip_are_unknown(
            self, component: SpeakerEncoder, voices: dict[str, list[AudioClip]]) -> None:
        if not component.capabilities.windows:
            pytest.skip("the encoder has no windows: it cannot tell a clip of two voices")
        from omoide.audio import resample

        a, b = (resample(c[0], 16000).samples for c in self._first_two(voices))
        both = AudioClip(np.concatenate([a, b]).astype(np.float32), 16000)
        embedding = await component.embed(both)
        assert embedding.quality.consistency is not None
        if component.config.mixed_check == "windows":
            assert embedding.reason is SpeakerReason.MIXED_VOICES
            return
        # halves: judged at identification, each half closest to its own enrolled voice
        first, second = self._first_two(voices)
        enrolled = {"alice": [(await component.embed(c)).vector for c in first[1:]],
                    "bob": [(await component.embed(c)).vector for c in second[1:]]}
        who = component.identify(embedding, enrolled)  # type: ignore[arg-type]
        assert (who.person, who.reason) == (None, SpeakerReason.MIXED_VOICES), who

    async def test_a_voiceprint_of_another_space_is_refused(
            self, component: SpeakerEncoder, voices: dict[str, list[AudioClip]]) -> None:
        embedding = await component.embed(self._first_two(voices)[0][0])
        foreign = dataclasses.replace(embedding, model_id="another-encoder")
        with pytest.raises(InvalidInput):
            component.identify(foreign, {"alice": [np.ones(component.dims, np.float32)]})
