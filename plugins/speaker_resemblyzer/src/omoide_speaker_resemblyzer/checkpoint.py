"""Read the tensors of a legacy (pre-zip) PyTorch checkpoint without torch.

``pretrained.pt`` is written in torch's legacy format: five pickles in a row (a magic
number, the protocol version, system info, the checkpoint itself, the list of storage
keys) followed by each storage's raw bytes (an int64 element count, then the data).
Tensors inside the checkpoint are ``torch._utils._rebuild_tensor_v2`` calls over
persistent ``("storage", type, key, location, numel, view)`` ids. The unpickler here
allows exactly those globals (and ``collections.OrderedDict``) and refuses any other,
so a file cannot run code; each tensor becomes a float32 numpy array.
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from omoide.api import ComponentError, FloatArray

MAGIC = 0x1950A86A20F9469CFC6C
PROTOCOL = 1001
_DTYPES: dict[str, np.dtype[Any]] = {
    "FloatStorage": np.dtype("<f4"), "DoubleStorage": np.dtype("<f8"),
    "LongStorage": np.dtype("<i8"), "IntStorage": np.dtype("<i4"),
    "HalfStorage": np.dtype("<f2")}


@dataclass(frozen=True)
class _StorageType:
    dtype: np.dtype[Any]


@dataclass
class _Storage:
    key: str
    dtype: np.dtype[Any]
    data: np.ndarray[Any, Any] | None = None


@dataclass(frozen=True)
class _TensorRef:
    storage: _Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def materialise(self) -> np.ndarray[Any, Any]:
        if self.storage.data is None:
            raise ComponentError(f"checkpoint: storage {self.storage.key} was never read")
        item = self.storage.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            self.storage.data[self.offset:], shape=self.shape,
            strides=tuple(s * item for s in self.stride))
        return np.array(view)


def _rebuild_tensor(storage: _Storage, offset: int, shape: tuple[int, ...],
                    stride: tuple[int, ...], *_: Any) -> _TensorRef:
    return _TensorRef(storage, offset, tuple(shape), tuple(stride))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BufferedIOBase, storages: dict[str, _Storage]) -> None:
        super().__init__(file)
        self._storages = storages

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in _DTYPES:
            return _StorageType(_DTYPES[name])
        raise pickle.UnpicklingError(f"checkpoint: refusing {module}.{name}")

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"checkpoint: unexpected persistent id {pid!r}")
        kind, key = pid[1], str(pid[2])
        if not isinstance(kind, _StorageType):
            raise pickle.UnpicklingError(f"checkpoint: unexpected storage type {kind!r}")
        return self._storages.setdefault(key, _Storage(key, kind.dtype))


def load_tensors(path: Path, section: str = "model_state") -> dict[str, FloatArray]:
    """The float32 tensors under ``section`` of the legacy torch checkpoint at ``path``.

    Raises :class:`ComponentError` when the file is not such a checkpoint."""
    try:
        with path.open("rb") as f:
            return _read(f, section)
    except (OSError, pickle.UnpicklingError, EOFError, struct.error, ValueError,
            KeyError, TypeError) as exc:
        raise ComponentError(f"checkpoint: cannot read {path}: {exc}") from exc


def _read(f: io.BufferedIOBase, section: str) -> dict[str, FloatArray]:
    if pickle.load(f) != MAGIC or pickle.load(f) != PROTOCOL:
        raise ValueError("not a legacy torch checkpoint (magic number or protocol)")
    pickle.load(f)  # system info: little endian, type sizes
    storages: dict[str, _Storage] = {}
    checkpoint = _Unpickler(f, storages).load()
    for key in pickle.load(f):
        storage = storages[str(key)]
        (count,) = struct.unpack("<q", f.read(8))
        raw = f.read(count * storage.dtype.itemsize)
        if len(raw) != count * storage.dtype.itemsize:
            raise ValueError(f"storage {key} is truncated")
        storage.data = np.frombuffer(raw, dtype=storage.dtype)
    state = checkpoint[section]
    return {name: ref.materialise().astype(np.float32) for name, ref in state.items()
            if isinstance(ref, _TensorRef)}
