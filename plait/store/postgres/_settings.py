"""What both PostgreSQL stores check and retry: LangGraph's options, pool settings, deadlock retries."""

from __future__ import annotations

from typing import Any, cast

from psycopg import errors

from plait.store.base import IndexConfig

__all__ = ["RETRIED", "RETRIES", "ann_settings", "check_options", "pool_args"]

RETRIES = 5
"""Runs of a batch whose transaction PostgreSQL rolled back as a deadlock victim (or a
serialization failure): nothing of it was applied, so it is run again, after a short random wait."""
RETRIED = (errors.DeadlockDetected, errors.SerializationFailure)


def ann_settings(index: IndexConfig | None) -> dict[str, object]:
    """HNSW settings from ``index["ann_index_config"]`` (``kind="hnsw"``; ``vector`` or ``halfvec``)."""
    ann: dict[str, Any] = dict(cast("dict[str, Any]", (index or {}).get("ann_index_config") or {}))
    kind = ann.pop("kind", "hnsw")
    if kind != "hnsw":
        raise NotImplementedError(
            f"ann_index_config {kind=!r}: plait's PostgresStore builds HNSW indexes only"
        )
    ann["vector_type"] = ann.get("vector_type") or "vector"
    if ann["vector_type"] not in ("vector", "halfvec"):
        raise NotImplementedError(
            f"ann_index_config vector_type={ann['vector_type']!r}: use 'vector' (float32) or 'halfvec' (float16)"
        )
    unknown = set(ann) - {"vector_type", "m", "ef_construction", "ef_search"}
    if unknown:
        raise NotImplementedError(
            f"ann_index_config keys {sorted(unknown)}: use vector_type, m, ef_construction, ef_search"
        )
    return ann


def pool_args(pool_config: dict[str, Any]) -> tuple[int, int | None, dict[str, Any]]:
    """``min_size`` (default 1), ``max_size`` and connection ``kwargs`` (autocommit) of a pool."""
    unknown = set(pool_config) - {"min_size", "max_size", "kwargs"}
    if unknown:
        raise NotImplementedError(f"pool_config keys {sorted(unknown)}: use min_size, max_size, kwargs")
    kwargs: dict[str, Any] = {"autocommit": True, **dict(pool_config.get("kwargs") or {})}
    return int(pool_config.get("min_size", 1)), pool_config.get("max_size"), kwargs


def check_options(pipe: object, deserializer: object) -> None:
    """Reject LangGraph options plait does not implement."""
    if pipe is not None:
        raise NotImplementedError(
            "PostgresStore(pipe=...): pass a connection or pool; use pipeline=True in from_conn_string"
        )
    if deserializer is not None:
        raise NotImplementedError(
            "PostgresStore(deserializer=...): plait stores values as jsonb and reads dicts"
        )
