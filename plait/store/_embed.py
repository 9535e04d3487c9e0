"""Semantic-index settings: the embedder, the fields to embed, and the dimension check.

``index={"dims": ..., "embed": ..., "fields": [...]}`` is read once into a frozen
:class:`IndexSpec`. ``embed`` may be a LangChain ``Embeddings``, a sync or async
function ``texts -> vectors``, or a ``"provider:model"`` string (LangChain's
``init_embeddings``). Field paths follow LangGraph: ``"a.b"``, ``"a[0]"``,
``"a[*].c"``, ``"*"``, ``"{a,b}"``; ``"$"`` (the default) embeds the whole value.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.embeddings import Embeddings

from plait._internal._io_primitives import acall_maybe_async, call_maybe_async
from plait._internal._narrow import is_list
from plait.store._paths import get_text_at_path, tokenize_path
from plait.store.base import EmbeddingDimensionError, IndexConfig, PutOp, SearchOp

__all__ = [
    "Embedded",
    "EmbeddingsLambda",
    "IndexSpec",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
]

Vector = list[float]
Path = tuple[str, ...]
_KEYS = {"dims", "embed", "fields", "text_fields", "distance_type", "ann_index_config"}


def _sync_embed_refused() -> TypeError:
    return TypeError(
        "the store's `embed` is an async function, so only the async store methods "
        "(aput, asearch, abatch) can embed; pass a sync function or an Embeddings object"
    )


class EmbeddingsLambda(Embeddings):
    """LangChain ``Embeddings`` over a plain function (sync or async) ``list[str] -> list[vector]``."""

    def __init__(self, func: Callable[[list[str]], Any]) -> None:
        """Wrap ``func``; an async function serves the async methods only.

        Args:
            func: The embedding function.
        """
        self.func = func
        self.is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
            getattr(func, "__call__", None)  # noqa: B004 - async callable objects count too
        )

    # >>> async source
    async def _acall(self, texts: list[str]) -> object:
        """The function's answer (awaited if the function is async; the sync form refuses an async
        one: only the async store methods can await it)."""
        return await acall_maybe_async(self.func, self.is_async, _sync_embed_refused, texts)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts."""
        return cast("list[list[float]]", await self._acall(texts))

    async def aembed_query(self, text: str) -> list[float]:
        """Embed one query text."""
        vectors = await self.aembed_documents([text])
        return vectors[0]

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def _call(self, texts: list[str]) -> object:
        """The function's answer (awaited if the function is async; the sync form refuses an async
        one: only the async store methods can await it)."""
        return call_maybe_async(self.func, self.is_async, _sync_embed_refused, texts)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts."""
        return cast("list[list[float]]", self._call(texts))

    def embed_query(self, text: str) -> list[float]:
        """Embed one query text."""
        vectors = self.embed_documents([text])
        return vectors[0]

    # <<< generated sync


def ensure_embeddings(embed: object) -> Embeddings:
    """Turn the ``embed`` setting into a LangChain ``Embeddings`` object.

    Args:
        embed: An ``Embeddings``, a function, or a ``"provider:model"`` string.

    Returns:
        The embeddings object.

    Raises:
        ImportError: For a string when LangChain's ``init_embeddings`` is not installed.
        TypeError: For anything else.
    """
    if isinstance(embed, Embeddings):
        return embed
    if isinstance(embed, str):
        try:
            module = importlib.import_module("langchain.embeddings")
        except ImportError as exc:
            raise ImportError(
                f"index embed={embed!r} is a model name, which needs LangChain's init_embeddings: "
                "pip install langchain plus the provider's package (e.g. langchain-openai); "
                "or pass an Embeddings object or a function instead"
            ) from exc
        return cast("Embeddings", module.init_embeddings(embed))
    if callable(embed):
        return EmbeddingsLambda(cast("Callable[[list[str]], object]", embed))
    raise TypeError(
        f"index['embed'] must be an Embeddings object, a function or a 'provider:model' string, got {embed!r}"
    )


@dataclass(frozen=True)
class Embedded:
    """Vectors computed for one batch, before any database work."""

    docs: dict[int, list[tuple[str, Vector]]]
    """Per put-operation index: ``(field name, vector)`` pairs."""
    queries: dict[str, Vector]
    """Per search query text: its vector."""


@dataclass(frozen=True)
class IndexSpec:
    """A validated ``index`` configuration."""

    dims: int
    """Length of every vector."""
    embeddings: Embeddings
    """The embedder."""
    fields: tuple[tuple[str, Path], ...]
    """Default fields: ``(path as written, tokens)``."""
    config: dict[str, Any]
    """The configuration as given (``store.index_config``)."""
    distance: str = "cosine"
    """How vectors are compared: ``cosine``, ``l2`` or ``inner_product``."""

    @classmethod
    def parse(
        cls, index: IndexConfig | Mapping[str, Any], distances: tuple[str, ...] = ("cosine",)
    ) -> IndexSpec:
        """Validate an ``index`` setting.

        Args:
            index: The setting. ``text_fields`` (LangGraph's SQLite spelling) is
                accepted for ``fields``.
            distances: The ``distance_type`` values the store ranks by.

        Returns:
            The spec.

        Raises:
            TypeError: On unknown keys or a bad ``dims``/``fields``.
            NotImplementedError: For a distance the store does not rank by.
        """
        unknown = set(index) - _KEYS
        if unknown:
            raise TypeError(f"unknown index settings {sorted(unknown)}; use {sorted(_KEYS)}")
        dims = index.get("dims")
        if not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0:
            raise TypeError(
                f"index['dims'] must be a positive int (the embedder's vector length), got {dims!r}"
            )
        distance = index.get("distance_type") or "cosine"
        if distance not in distances:
            raise NotImplementedError(
                f"index distance_type={distance!r}: this store ranks by {' or '.join(distances)}"
            )
        if "embed" not in index:
            raise TypeError(
                "index needs 'embed': an Embeddings object, a function or a 'provider:model' string"
            )
        fields = _fields(index)
        tokens = tuple((f, tokenize_path(f) if f != "$" else ()) for f in fields)
        return cls(dims, ensure_embeddings(index["embed"]), tokens, dict(index), distance)

    def texts(self, op: PutOp) -> list[tuple[str, str]]:
        """The ``(field name, text)`` pairs to embed for a put (none for deletes or ``index=False``)."""
        if op.value is None or op.index is False:
            return []
        paths = self.fields if op.index is None else tuple((f, tokenize_path(f)) for f in op.index)
        out: list[tuple[str, str]] = []
        for name, tokens in paths:
            found = get_text_at_path(op.value, tokens)
            out.extend((f"{name}.{i}" if len(found) > 1 else name, text) for i, text in enumerate(found))
        return out

    def check(self, vectors: Sequence[Sequence[float]], count: int) -> list[Vector]:
        """Check the embedder's answer: ``count`` vectors of ``dims`` numbers each."""
        if len(vectors) != count:
            raise EmbeddingDimensionError(
                f"the embedder returned {len(vectors)} vectors for {count} texts; it must return one per text"
            )
        out = [list(map(float, v)) for v in vectors]
        for vector in out:
            if len(vector) != self.dims:
                raise EmbeddingDimensionError(
                    f"the embedder returned a vector of {len(vector)} numbers but index['dims'] is {self.dims}; "
                    "set dims to the model's vector size (nothing was stored)"
                )
        return out

    def plan(self, ops: Sequence[object]) -> tuple[list[tuple[int, str, str]], list[str]]:
        """What to embed for a batch: ``(op index, field, text)`` for puts, and distinct queries."""
        docs = [(i, f, t) for i, op in enumerate(ops) if isinstance(op, PutOp) for f, t in self.texts(op)]
        queries = sorted({op.query for op in ops if isinstance(op, SearchOp) and op.query})
        return docs, queries

    # >>> async source
    async def aembed(self, ops: Sequence[object]) -> Embedded:
        """Embed a batch's documents and queries."""
        docs, queries = self.plan(ops)
        texts = [t for _, _, t in docs]
        vectors = self.check(await self.embeddings.aembed_documents(texts), len(docs)) if docs else []
        qvecs = [self.check([await self.embeddings.aembed_query(q)], 1)[0] for q in queries]
        return _embedded(docs, vectors, queries, qvecs)

    # <<< async source

    # >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
    def embed(self, ops: Sequence[object]) -> Embedded:
        """Embed a batch's documents and queries."""
        docs, queries = self.plan(ops)
        texts = [t for _, _, t in docs]
        vectors = self.check(self.embeddings.embed_documents(texts), len(docs)) if docs else []
        qvecs = [self.check([self.embeddings.embed_query(q)], 1)[0] for q in queries]
        return _embedded(docs, vectors, queries, qvecs)

    # <<< generated sync


def _fields(index: IndexConfig | Mapping[str, Any]) -> list[str]:
    """``fields`` (or ``text_fields``; a single path may be a string), default ``["$"]``."""
    settings: Mapping[str, object] = index
    given: dict[str, object] = {k: settings.get(k) for k in ("fields", "text_fields") if settings.get(k)}
    if len(given) == 2 and given["fields"] != given["text_fields"]:
        raise TypeError("index has both 'fields' and 'text_fields' with different paths; give one")
    fields: object = next(iter(given.values()), None) or ["$"]
    if isinstance(fields, str):
        return [fields]
    paths = [f for f in fields if isinstance(f, str)] if is_list(fields) else []
    if not is_list(fields) or len(paths) != len(fields):
        raise TypeError(f"index['fields'] must be a list of field paths, got {fields!r}")
    return paths


def _embedded(
    docs: list[tuple[int, str, str]], vectors: list[Vector], queries: list[str], qvecs: list[Vector]
) -> Embedded:
    by_op: dict[int, list[tuple[str, Vector]]] = {}
    for (i, field, _), vector in zip(docs, vectors, strict=True):
        by_op.setdefault(i, []).append((field, vector))
    return Embedded(by_op, dict(zip(queries, qvecs, strict=True)))
