"""Exact ranking in Python (NumPy when installed), for stores without a vector extension.

A store that must rank by scanning says so once per process (:func:`warn_once`),
naming what to install; it never gets slow silently.
"""

from __future__ import annotations

import array
import importlib
import math
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ExactScanWarning", "VectorMatrix", "cosine", "numpy", "pack", "similarity", "unpack", "warn_once"]

_WARNED: set[str] = set()
_LOCK = threading.Lock()


class ExactScanWarning(RuntimeWarning):
    """Semantic search runs as an exact scan in Python: correct, but slower on large stores."""


def warn_once(reason: str, message: str) -> None:
    """Emit ``message`` as an :class:`ExactScanWarning` the first time ``reason`` is seen.

    Args:
        reason: What the warning is about (deduplication key).
        message: The text, naming what to install.
    """
    with _LOCK:
        if reason in _WARNED:
            return
        _WARNED.add(reason)
    warnings.warn(message, ExactScanWarning, stacklevel=3)


def numpy() -> Any:
    """The ``numpy`` module, or ``None`` when it is not installed (then a warning says so once)."""
    try:
        return importlib.import_module("numpy")
    except ImportError:
        warn_once(
            "numpy",
            "NumPy is not installed, so plait ranks store vectors in pure Python (slow on large stores); "
            "install it with: pip install 'plait[vector]'",
        )
        return None


def pack(vector: Sequence[float]) -> bytes:
    """A vector as little-endian float32 bytes (sqlite-vec's format)."""
    data = array.array("f", vector)
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        data.byteswap()
    return data.tobytes()


def unpack(blob: bytes) -> list[float]:
    """The inverse of :func:`pack`."""
    data = array.array("f")
    data.frombytes(blob)
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        data.byteswap()
    return data.tolist()


def cosine(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    """Cosine similarity of ``query`` with each vector (0 for zero vectors).

    Args:
        query: The query vector.
        vectors: The vectors to score.

    Returns:
        One score per vector.
    """
    if not vectors:
        return []
    np = numpy()
    if np is not None:
        matrix = np.asarray(vectors, dtype=np.float32)
        return VectorMatrix.from_array(np, matrix).scores(query).tolist()  # type: ignore[no-any-return]
    qnorm = math.sqrt(sum(x * x for x in query))
    out: list[float] = []
    for vector in vectors:
        norm = math.sqrt(sum(x * x for x in vector))
        dot = sum(a * b for a, b in zip(query, vector, strict=False))
        out.append(dot / (qnorm * norm) if qnorm and norm else 0.0)
    return out


def _dot(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    return [sum(a * b for a, b in zip(query, vector, strict=False)) for vector in vectors]


def _neg_l2(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> list[float]:
    return [-math.sqrt(sum((a - b) ** 2 for a, b in zip(query, vector, strict=False))) for vector in vectors]


Scorer = Callable[[Sequence[float], Sequence[Sequence[float]]], list[float]]


def similarity(distance: str) -> Scorer:
    """The scorer of a distance type, higher is closer (pgvector's scores).

    Args:
        distance: ``"cosine"`` (cosine similarity), ``"l2"`` (minus the euclidean
            distance) or ``"inner_product"`` (the dot product).

    Returns:
        A function ``(query, vectors) -> scores``.
    """
    return {"cosine": cosine, "l2": _neg_l2, "inner_product": _dot}[distance]


class VectorMatrix:
    """Row-normalised float32 vectors in one NumPy matrix, scored by a single product."""

    def __init__(self, np: Any, matrix: Any) -> None:
        """Keep ``matrix`` (rows already normalised).

        Args:
            np: The numpy module.
            matrix: An ``(n, dims)`` float32 array.
        """
        self.np = np
        self.matrix = matrix

    @classmethod
    def from_array(cls, np: Any, matrix: Any) -> VectorMatrix:
        """Normalise the rows of ``matrix`` (zero rows stay zero)."""
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        return cls(np, matrix / norms[:, None])

    @classmethod
    def from_blobs(cls, np: Any, blobs: Sequence[bytes], dims: int) -> VectorMatrix:
        """Build from float32 blobs of ``dims`` numbers each."""
        if not blobs:
            return cls(np, np.zeros((0, dims), dtype=np.float32))
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dims)
        return cls.from_array(np, matrix.astype(np.float32))

    def scores(self, query: Sequence[float]) -> Any:
        """Cosine similarity of ``query`` with every row."""
        q = self.np.asarray(query, dtype=self.np.float32)
        norm = float(self.np.linalg.norm(q))
        # einsum, not BLAS: one thread, and no thread pool fighting other processes for the cores
        return self.np.einsum("ij,j->i", self.matrix, q / norm if norm else q)

    def top(self, scores: Any, count: int) -> list[int]:
        """Indices of the ``count`` best scores, best first."""
        n = len(scores)
        if count >= n:
            return [int(i) for i in self.np.argsort(-scores, kind="stable")]
        part = self.np.argpartition(-scores, count)[:count]
        return [int(i) for i in part[self.np.argsort(-scores[part], kind="stable")]]
