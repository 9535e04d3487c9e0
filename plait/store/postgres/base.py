"""The names of ``langgraph.store.postgres.base``: the PostgreSQL settings and :class:`PostgresStore`."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from plait.store.base import IndexConfig
from plait.store.postgres._store import PostgresStore

__all__ = ["ANNIndexConfig", "HNSWConfig", "PoolConfig", "PostgresIndexConfig", "PostgresStore"]


class PoolConfig(TypedDict, total=False):
    """A ``psycopg_pool`` connection pool for ``from_conn_string(pool_config=...)``.

    Attributes:
        min_size: Connections kept open (default 1).
        max_size: Most connections open at once.
        kwargs: Extra connection arguments (``autocommit`` is always on).
    """

    min_size: int
    max_size: int | None
    kwargs: dict[str, Any]


class ANNIndexConfig(TypedDict, total=False):
    """The approximate-nearest-neighbour index over the vectors.

    Attributes:
        kind: ``"hnsw"`` (the one plait builds).
        vector_type: ``"vector"`` (float32) or ``"halfvec"`` (float16).
    """

    kind: Literal["hnsw", "ivfflat", "flat"]
    vector_type: Literal["vector", "halfvec", "bit"]


class HNSWConfig(ANNIndexConfig, total=False):
    """HNSW settings (pgvector's defaults: ``m=16``, ``ef_construction=64``; plait searches with ``ef_search=100``).

    Attributes:
        m: Links per node.
        ef_construction: Candidate list size while building.
        ef_search: Candidate list size while searching (plait's addition).
    """

    m: int
    ef_construction: int
    ef_search: int


class PostgresIndexConfig(IndexConfig, total=False):
    """Semantic-search settings of :class:`PostgresStore`.

    Attributes:
        ann_index_config: The vector index (:class:`HNSWConfig`).
        distance_type: ``"cosine"``, ``"l2"`` or ``"inner_product"``.
    """

    ann_index_config: ANNIndexConfig
    distance_type: Literal["l2", "inner_product", "cosine"]
