"""Imports: every line checked with its number, nothing half-imported, idempotent,
stored in batches at batch priority."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from omoide.errors import InvalidInput
from omoide.memory.control.import_format import (
    ImportFailed,
    ImportTooLarge,
    ParsedImport,
    chunks_of,
    parse_import,
)
from omoide.testing.doubles import HashEmbedder, HashEmbedderConfig
from omoide.types import EmbedPurpose, FloatArray, Memory, Priority

NOW = datetime(2026, 9, 27, 21, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
CAT = "あなたは猫のむぎを飼っている。"


async def parse(data: bytes, *, max_items: int = 100, chunk: int = 7) -> ParsedImport:
    return await parse_import(chunks_of(data, chunk), max_items=max_items, max_bytes=1 << 24)


def line(**fields: Any) -> bytes:
    return json.dumps(fields, ensure_ascii=False).encode() + b"\n"


@pytest.mark.parametrize(("raw", "message"), [
    (b"\xff\xfe{}", "not valid UTF-8"),
    (b'{"text": "x", "entities": 5}', "entities: Input should be a valid list"),
    (b'{"text": "x", "superseded_by": [1]}', "superseded_by: Input should be a valid string"),
    (b"[" * 100_000, "longer than 65536 bytes"),
    (b"[" * 60_000, "not JSON: recursion limit exceeded"),
    (b'{"text": null}', "text: Input should be a valid string"),
    (b'{"text": 5}', "text: Input should be a valid string"),
    (b'{"text": "   "}', "text: must not be blank"),
    (b'{"text": "' + "あ".encode() * 201 + b'"}', "text: String should have at most 200"),
    (b'{"text": "x", "created_at": "9999-12-31T23:59:59"}', "created_at: 9999-12-31"),
    (b'{"text": "x", "created_at": 1700000000}', "created_at: must be an ISO 8601 string"),
    (b'{"text": "x", "event_dates": ["0001-01-01"]}', "outside the accepted range"),
    (b'{"text": "x", "entities": ["\\u001b[31m"]}', "control characters"),
    (b'{"text": "x", "colour": "red"}', "colour: Extra inputs are not permitted"),
    (b'["a list", "not a memory"]', "line 2: expected a JSON object (one memory), got a list"),
    (b'"just a string"', "expected a JSON object (one memory), got a string"),
])
async def test_a_bad_line_is_a_problem_on_its_line_never_an_exception(raw: bytes,
                                                                      message: str) -> None:
    parsed = await parse(line(text=CAT) + raw + b"\n" + line(text="あなたは犬が好きだ。"))
    assert [i.text for i in parsed.items] == [CAT, "あなたは犬が好きだ。"]
    assert parsed.invalid == 1
    assert message in str(parsed.problems[0]), parsed.problems


async def test_every_problem_is_reported_with_its_line_number() -> None:
    data = (line(text=CAT) + b"\n" + b'{"text": null}\n' + line(text="ok")
            + b'{"entities": 5, "text": "x"}\n' + b"not json\n")
    parsed = await parse(data)
    assert [(p.position, p.unit) for p in parsed.problems] == [(3, "line"), (5, "line"),
                                                                (6, "line")]
    assert len(parsed.items) == 2 and parsed.invalid == 3


async def test_a_json_list_is_read_with_item_numbers() -> None:
    data = json.dumps([{"text": CAT}, {"text": None}]).encode()
    parsed = await parse(b"\xef\xbb\xbf" + data)
    assert [i.text for i in parsed.items] == [CAT]
    assert str(parsed.problems[0]).startswith("item 2: text:")


async def test_an_over_long_line_is_a_problem_without_being_kept() -> None:
    parsed = await parse(line(text=CAT) + b'{"text": "' + b"x" * 200_000 + b'"}\n'
                         + line(text="あなたは犬が好きだ。"), chunk=4096)
    assert parsed.problems[0].position == 2 and "longer than" in parsed.problems[0].message
    assert len(parsed.items) == 2


async def test_more_items_than_allowed_stop_the_import() -> None:
    with pytest.raises(ImportTooLarge, match="max_import_items"):
        await parse(line(text="a") * 4, max_items=3)


async def test_an_import_bigger_than_its_byte_limit_stops() -> None:
    with pytest.raises(ImportTooLarge, match="max_import_bytes"):
        await parse_import(chunks_of(line(text=CAT) * 100), max_items=1000, max_bytes=1000)


# -- the engine's import ---------------------------------------------------------------------
async def test_importing_the_same_export_twice_stores_it_once(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    items = [{"id": "a", "text": CAT}, {"id": "b", "text": "あなたはギターの練習をしている。"}]
    first = await engine.import_memories("alice", items)
    second = await engine.import_memories("alice", items)
    assert (len(first.stored), first.skipped) == (2, 0)
    assert (len(second.stored), second.skipped) == (0, 2)
    assert len(await engine.list_memories("alice")) == 2


async def test_the_same_canonical_text_is_skipped_whatever_its_id_or_width(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await engine.add_memories("alice", [Memory("x", "alice", CAT, NOW)])
    report = await engine.import_memories("alice", [
        {"id": "other", "text": "あなたは猫のむぎを飼っている"},          # no full stop
        {"text": "あなたは 猫のむぎを 飼っている。"},                      # spaces
        {"id": "x", "text": "あなたは別のことを言った。"},                 # an existing id
        {"text": "あなたはギターの練習をしている。"},
        {"text": "あなたはギターの練習をしている。"},                      # twice in the file
    ])
    assert [m.text for m in report.stored] == ["あなたはギターの練習をしている。"]
    assert report.skipped == 4


async def test_an_export_of_one_person_never_overwrites_another(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    await engine.add_memories("alice", [Memory("x", "alice", CAT, NOW)])
    report = await engine.import_memories("bob", await engine.export("alice"))
    assert report.stored[0].id != "x" and report.stored[0].user == "bob"
    assert [m.id for m in await engine.list_memories("alice")] == ["x"]


async def test_superseded_links_follow_the_imported_ids(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    report = await engine.import_memories("alice", [
        {"id": "old", "text": "あなたは土曜に箱根に行く。", "superseded_by": "new"},
        {"id": "new", "text": "あなたは日曜に箱根に行く。"},
        {"id": "lost", "text": "あなたは京都に行く。", "superseded_by": "not-in-file"}])
    by_text = {m.text: m for m in report.stored}
    assert by_text["あなたは土曜に箱根に行く。"].superseded_by == by_text["あなたは日曜に箱根に行く。"].id
    assert by_text["あなたは京都に行く。"].superseded_by is None


async def test_an_invalid_item_given_to_the_engine_stores_nothing(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = await make_engine()
    with pytest.raises(InvalidInput, match="item 2: entities"):
        await engine.import_memories("alice", [{"text": CAT}, {"text": "x", "entities": 5}])
    with pytest.raises(InvalidInput):
        await engine.import_memories("../../etc", [{"text": CAT}])
    assert await engine.list_memories("alice") == []


class RecordingEmbedder(HashEmbedder):
    """The hash embedder double, recording each call's size and priority; fails on
    the call numbered ``fail_on`` (1-based) when set."""

    def __init__(self, config: HashEmbedderConfig, fail_on: int | None = None) -> None:
        super().__init__(config)
        self.calls: list[tuple[int, Priority]] = []
        self.fail_on = fail_on

    async def _embed(self, texts: Sequence[str], purpose: EmbedPurpose,
                     priority: Priority) -> FloatArray:
        self.calls.append((len(texts), priority))
        if self.fail_on is not None and len(self.calls) >= self.fail_on:
            from omoide.errors import ComponentError
            raise ComponentError("embedder went away")
        return await super()._embed(texts, purpose, priority)


async def test_an_import_is_embedded_in_batches_at_batch_priority(make_engine) -> None:  # type: ignore[no-untyped-def]
    embedder = RecordingEmbedder(HashEmbedderConfig(dims=64, batch_size=8))
    engine = await make_engine(embedder=embedder)
    embedder.calls.clear()   # the start-up fingerprint
    items = [{"text": f"あなたは{i}冊目の本を読んだ。"} for i in range(20)]
    report = await engine.import_memories("alice", items, batch_size=10)
    assert len(report.stored) == 20
    assert embedder.calls == [(8, Priority.BATCH), (2, Priority.BATCH)] * 2


async def test_a_failure_part_way_says_how_much_was_stored(make_engine) -> None:  # type: ignore[no-untyped-def]
    embedder = RecordingEmbedder(HashEmbedderConfig(dims=64))
    engine = await make_engine(embedder=embedder)
    embedder.calls.clear()
    embedder.fail_on = 2
    items = [{"text": f"あなたは{i}冊目の本を読んだ。"} for i in range(20)]
    with pytest.raises(ImportFailed, match="after 10 of 20") as failed:
        await engine.import_memories("alice", items, batch_size=10)
    assert len(failed.value.report.stored) == 10
    assert len(await engine.list_memories("alice")) == 10
    embedder.fail_on = None
    again = await engine.import_memories("alice", items, batch_size=10)   # resumes
    assert (len(again.stored), again.skipped) == (10, 10)


async def test_two_imports_at_once_for_one_person_store_a_text_once(make_engine) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    engine = await make_engine()
    first, second = await asyncio.gather(
        engine.import_memories("alice", [{"id": "a", "text": CAT}]),
        engine.import_memories("alice", [{"id": "b", "text": CAT}]))
    assert len(first.stored) + len(second.stored) == 1
    assert len(await engine.list_memories("alice")) == 1
