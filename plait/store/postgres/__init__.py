"""PostgreSQL long-term store: :class:`PostgresStore` and its asyncio twin :class:`AsyncPostgresStore`.

Needs the ``postgres`` extra: ``pip install 'plait[postgres]'`` (psycopg 3 and
psycopg_pool). Semantic search uses the server's pgvector extension when present.
"""

from __future__ import annotations

try:
    import psycopg  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported only to check the extra is installed
    import psycopg_pool  # noqa: F401  # pyright: ignore[reportUnusedImport]  # imported only to check the extra is installed
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"plait.store.postgres needs psycopg 3 and psycopg_pool ({exc.name} is missing); "
        "install them with: pip install 'plait[postgres]'"
    ) from exc

from plait.store.postgres.aio import AsyncPostgresStore
from plait.store.postgres.base import PoolConfig, PostgresStore

__all__ = ["AsyncPostgresStore", "PoolConfig", "PostgresStore"]
