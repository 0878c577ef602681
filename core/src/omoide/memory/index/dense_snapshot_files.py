"""Large people's dense snapshots kept on disk, so their first turns after a start get
dense recall at once.

A person whose index is too large to keep (``memory.index.keep_max_memories``) is read
from the store and analysed again after every start. Reading is the slow part for the
first turns: Qdrant local opens a person's 100,000 points in 7-11 s, and until then no
store search of theirs answers. So the records read for such a person's index (a
:class:`~omoide.memory.index.dense_snapshot.DenseSnapshot`) are saved here, and their next
build after a start loads them first (about a second for 100,000) and answers dense
recall from them while the store is read and the index analysed.

Per person (file names are a hash of the user id), in ``<data_dir>/dense/``:

* ``<key>.npy`` — the unit vectors, one row per memory (memory-mapped when loaded);
* ``<key>.rows.gz`` — a JSON line with the user and the ids, then each payload as a
  JSON line in the same order (kept as text until a search returns it: loading 100,000
  takes about 0.1 s, not the 0.6 s of decoding them all);
* ``<key>.log`` — what was written since, one JSON line each: the index cache appends
  every write of a person who has a snapshot, so it stays what the store holds without
  rewriting the large files.

A forget deletes the person's snapshot (the index cache does it, as it deletes their
saved index): a forgotten memory's text must not stay on disk in a copy. Their next
build saves a new one.

A save replaces all three (a new ``.npy`` and ``.rows.gz`` are written beside and
renamed over the old ones, then the log is emptied). The files are the owner's only:
they hold the person's memories, like the store. The vectors are the embedder's:
the index cache deletes every snapshot when the store is re-embedded.

Use from one thread (the index cache's worker).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from omoide.memory.index.dense_snapshot import DenseSnapshot
from omoide.memory.store_payload import to_payload
from omoide.types import FloatArray, Memory

log = logging.getLogger("omoide.memory.index")

Write = tuple[Memory, FloatArray | None] | None
"""A write seen since a snapshot was read (or while an index is built): a memory and its
vector, or None (forgotten)."""


class SavedSnapshots:
    """Dense snapshots in one directory (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _paths(self, user: str) -> tuple[Path, Path, Path]:
        key = hashlib.sha256(user.encode()).hexdigest()[:32]
        return (self.root / f"{key}.npy", self.root / f"{key}.rows.gz",
                self.root / f"{key}.log")

    def has(self, user: str) -> bool:
        return self._paths(user)[1].exists()

    def save(self, user: str, snapshot: DenseSnapshot,
             since: Mapping[str, Write] | None = None) -> None:
        """Keep ``snapshot`` for ``user`` with the writes ``since`` it was read (the
        build's pending writes), replacing any older one and its log."""
        matrix_path, rows_path, log_path = self._paths(user)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        ids, matrix, payloads = snapshot.parts()
        tmp_matrix = matrix_path.with_suffix(".npy.tmp")
        tmp_rows = rows_path.with_suffix(".tmp")
        with _private(tmp_matrix) as f:
            np.save(f, np.ascontiguousarray(matrix, dtype=np.float32))
        lines = [json.dumps({"user": user, "ids": ids}, ensure_ascii=False).encode()]
        lines += [p if isinstance(p, bytes) else json.dumps(p, ensure_ascii=False).encode()
                  for p in (payloads[i] for i in ids)]
        with _private(tmp_rows) as f:
            f.write(gzip.compress(b"\n".join(lines), compresslevel=1))
        os.replace(tmp_matrix, matrix_path)
        os.replace(tmp_rows, rows_path)
        log_path.unlink(missing_ok=True)
        if since:
            self._append(log_path, since.items())

    def load(self, user: str) -> DenseSnapshot | None:
        """``user``'s snapshot with the writes logged since, or None (none kept, or
        unreadable: then it is deleted and the caller reads the store)."""
        matrix_path, rows_path, log_path = self._paths(user)
        if not rows_path.exists():
            return None
        try:
            lines = gzip.decompress(rows_path.read_bytes()).split(b"\n")
            head = json.loads(lines[0])
            ids, payloads = head["ids"], lines[1:]
            matrix = np.load(matrix_path, mmap_mode="r")
            if head.get("user") != user or not len(ids) == len(payloads) == len(matrix):
                raise ValueError("the vectors and rows do not match")
            changes = _read_log(log_path)
        except Exception as exc:  # noqa: BLE001 - a copy: the store still has it all
            log.warning("the saved dense snapshot of %s is unreadable (%s); reading the"
                        " store instead", user, exc)
            self.delete(user)
            return None
        return DenseSnapshot.from_parts(ids, matrix, payloads, changes)

    def append(self, user: str, writes: Iterable[tuple[str, Write]]) -> None:
        """Log writes (id -> memory and vector, or None for a forget) of a person who
        has a snapshot; nothing for anyone else."""
        _, rows_path, log_path = self._paths(user)
        if rows_path.exists():
            self._append(log_path, writes)

    def _append(self, log_path: Path, writes: Iterable[tuple[str, Write]]) -> None:
        lines = []
        for memory_id, write in writes:
            # forgotten, or without a vector to search by (left to the store search)
            if write is None or write[1] is None:
                lines.append(json.dumps({"forget": memory_id}))
                continue
            memory, vector = write
            lines.append(json.dumps({
                "id": memory_id, "payload": to_payload(memory),
                "vector": base64.b64encode(
                    np.asarray(vector, dtype=np.float32).tobytes()).decode()},
                ensure_ascii=False))
        with _private(log_path, append=True) as f:
            f.write("".join(line + "\n" for line in lines).encode())

    def delete(self, user: str) -> None:
        for path in self._paths(user):
            path.unlink(missing_ok=True)

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _private(path: Path, append: bool = False) -> BinaryIO:
    """``path`` opened for writing (or appending), created readable by the owner only."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    return os.fdopen(os.open(path, flags, 0o600), "ab" if append else "wb")


def _read_log(path: Path) -> list[tuple[str, dict[str, Any] | None, FloatArray | None]]:
    """(id, payload, vector) per logged write, (id, None, None) per forget, in order.
    A torn last line (a crash while appending) is left out."""
    if not path.exists():
        return []
    out: list[tuple[str, dict[str, Any] | None, FloatArray | None]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "forget" in entry:
            out.append((entry["forget"], None, None))
        else:
            vector = np.frombuffer(base64.b64decode(entry["vector"]), dtype=np.float32)
            out.append((entry["id"], entry["payload"], vector))
    return out


__all__ = ["SavedSnapshots"]
