"""The names of ``langgraph.store.sqlite.base``: the SQLite index settings and :class:`SqliteStore`."""

from __future__ import annotations

from plait.store.base import IndexConfig
from plait.store.sqlite._store import SqliteStore

__all__ = ["SqliteIndexConfig", "SqliteStore"]


class SqliteIndexConfig(IndexConfig, total=False):
    """Semantic-search settings of :class:`SqliteStore`.

    Attributes:
        text_fields: LangGraph's SQLite spelling of ``fields`` (either is accepted).
        distance_type: ``"cosine"`` (the default; sqlite-vec or NumPy), ``"l2"`` or
            ``"inner_product"`` (an exact scan).
    """

    text_fields: list[str] | str | None
    distance_type: str
