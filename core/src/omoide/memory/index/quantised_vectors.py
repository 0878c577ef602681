"""One person's memory vectors in an index: int8 rows with a scale each.

A float32 vector of 384 dimensions takes 1,536 bytes; its int8 row with a float32 scale
(``max |v| / 127``) takes 388, and the cosine computed from it differs from the float32
one by about 0.002 at most (measured on the hashing double and e5 vectors: the order of
the nearest memories does not change). Rows live in one growing matrix, so the dense
channel reads them with one product and no second copy; a removed memory's row is
reused by the next one added.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from omoide.types import FloatArray

_GROW = 1.5
"""How much the matrix grows when full (amortised copies: a few per decade of memories)."""


def quantise(vector: FloatArray) -> tuple[NDArray[np.int8], float]:
    """A vector as int8 values and the scale that gives them back (``row * scale``)."""
    v = np.asarray(vector, dtype=np.float32)
    top = float(np.max(np.abs(v))) if v.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return np.zeros(v.shape, dtype=np.int8), 0.0
    scale = top / 127.0
    return np.clip(np.rint(v / scale), -127, 127).astype(np.int8), scale


class QuantisedVectors:
    """Vectors by row number: :meth:`put` stores one and returns its row, :meth:`free`
    gives a row back, :meth:`get` and :meth:`similarities` read them as float32."""

    def __init__(self, dims: int = 0) -> None:
        self._rows: NDArray[np.int8] = np.zeros((0, dims), dtype=np.int8)
        self._scales: NDArray[np.float32] = np.zeros(0, dtype=np.float32)
        self._used: NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._end = 0
        self._free: list[int] = []

    def __len__(self) -> int:
        return self._end - len(self._free)

    @property
    def nbytes(self) -> int:
        """Bytes the rows, scales and flags take (the allocated matrix, spare rows too)."""
        return int(self._rows.nbytes + self._scales.nbytes + self._used.nbytes)

    def put(self, vector: FloatArray) -> int:
        """Store ``vector``; its row number."""
        values, scale = quantise(vector)
        if self._rows.shape[1] != values.shape[0]:
            if self._end - len(self._free):
                raise ValueError(f"a vector of {values.shape[0]} dimensions in an index of"
                                 f" {self._rows.shape[1]}")
            self._rows = np.zeros((0, values.shape[0]), dtype=np.int8)  # the first sets them
            self._scales = np.zeros(0, dtype=np.float32)
            self._used = np.zeros(0, dtype=bool)
            self._end = 0
            self._free = []
        row = self._free.pop() if self._free else self._append_row()
        self._rows[row] = values
        self._scales[row] = scale
        self._used[row] = True
        return row

    def _append_row(self) -> int:
        if self._end == len(self._scales):
            size = max(16, int(len(self._scales) * _GROW))
            rows = np.zeros((size, self._rows.shape[1]), dtype=np.int8)
            rows[:self._end] = self._rows[:self._end]
            scales = np.zeros(size, dtype=np.float32)
            scales[:self._end] = self._scales[:self._end]
            used = np.zeros(size, dtype=bool)
            used[:self._end] = self._used[:self._end]
            self._rows, self._scales, self._used = rows, scales, used
        self._end += 1
        return self._end - 1

    def free(self, row: int) -> None:
        self._used[row] = False
        self._scales[row] = 0.0
        self._free.append(row)

    def get(self, row: int) -> FloatArray:
        vector: FloatArray = self._rows[row].astype(np.float32) * self._scales[row]
        return vector

    def similarities(self, query: FloatArray, rows: Sequence[int] | None = None) -> FloatArray:
        """Dot products of ``query`` with the given rows (all rows when None: free ones
        come out as -inf)."""
        q = np.asarray(query, dtype=np.float32)
        if rows is None:
            sims: FloatArray = np.einsum("ij,j->i", self._rows[:self._end], q,
                                         dtype=np.float32, casting="unsafe")
            sims *= self._scales[:self._end]
            sims[~self._used[:self._end]] = -np.inf
            return sims
        picked = np.asarray(rows, dtype=np.intp)
        some: FloatArray = np.einsum("ij,j->i", self._rows[picked], q, dtype=np.float32,
                                     casting="unsafe")
        some *= self._scales[picked]
        return some
