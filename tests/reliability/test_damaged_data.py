"""Missing or damaged memory data: ``omoide serve`` refuses to start over it, naming the
file and how to proceed, unless told to accept the loss — then it keeps what it can."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(
    any(__import__("importlib").util.find_spec(m) is None
        for m in ("omoide_store_qdrant", "omoide_standins")),
    reason="needs the store_qdrant and standins plugins")


@pytest.fixture
def data(history: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(history, copy)
    return copy


def test_the_data_dir_records_what_it_holds(data: Path) -> None:
    import json
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["journal"] == {"file": "journal.sqlite3", "exchanges": 5}
    assert manifest["store"]["component"] == "qdrant" and manifest["store"]["memories_stored"]


def test_a_zero_length_journal_refuses_to_start(data: Path, refused_start: Any) -> None:
    (data / "journal.sqlite3").write_bytes(b"")
    code, err = refused_start(data)
    assert code == 1
    assert f"{data / 'journal.sqlite3'}: the journal is empty (0 bytes)" in err
    assert "--accept-data-loss" in err and "Traceback" not in err


def test_a_journal_with_a_garbage_page_refuses_to_start(data: Path,
                                                        refused_start: Any) -> None:
    with (data / "journal.sqlite3").open("r+b") as f:
        f.seek(4096 * 2)
        f.write(bytes(range(256)) * 16)
    code, err = refused_start(data)
    assert code == 1 and "the journal is damaged" in err and "journal.sqlite3" in err


def test_a_deleted_store_refuses_to_start(data: Path, refused_start: Any) -> None:
    shutil.rmtree(data / "qdrant")
    code, err = refused_start(data)
    assert code == 1
    assert f"{data / 'qdrant'}: the vector store (qdrant) holds no memories" in err


def test_accepting_a_damaged_journal_keeps_the_memories_and_what_can_be_read(
        data: Path, serve_omoide: Any) -> None:
    with (data / "journal.sqlite3").open("r+b") as f:
        f.seek(4096 * 2)
        f.write(bytes(range(256)) * 16)
    server = serve_omoide(data, "--accept-data-loss")
    memories = server.get("/v1/users/alice/memories")["memories"]
    assert any("箱根" in m["text"] for m in memories)
    assert list(data.glob("journal.sqlite3.damaged-*"))
    server.stop()
    again = serve_omoide(data)        # the manifest now describes what is there
    assert again.get("/healthz")["components"]["memory"]["state"] == "ready"


def test_an_intact_data_dir_starts_with_its_memories(data: Path, serve_omoide: Any) -> None:
    server = serve_omoide(data)
    assert len(server.get("/v1/users/alice/memories")["memories"]) >= 4
    assert server.get("/v1/memory/pending") == {"pending": []}
