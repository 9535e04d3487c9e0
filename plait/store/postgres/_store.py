"""``PostgresStore``: the long-term store in PostgreSQL (psycopg 3, sync connections or pools)."""

from __future__ import annotations

from psycopg import Connection

from plait.store._group import ThreadGroups
from plait.store.postgres._settings import ann_settings, check_options, pool_args
from plait.store.postgres._sync_io import PostgresIO

__all__ = ["PostgresStore", "ann_settings", "check_options", "pool_args"]


class PostgresStore(PostgresIO):
    """Long-term store in PostgreSQL, with semantic search (pgvector, HNSW) and TTL.

    Tables ``plait_store`` and ``plait_store_vectors`` are created by :meth:`setup`
    (also run on first use). Each batch is one transaction (or, being one statement,
    needs none: see ``docs/store.md``). Without pgvector on
    the server, search still works by an exact scan and warns once.

    Example:
        >>> with PostgresStore.from_conn_string("postgresql://localhost/db") as store:
        ...     store.setup()
        ...     store.put(("users", "u1"), "profile", {"name": "Ann"})

    Args:
        conn: A psycopg ``Connection`` (autocommit) or ``ConnectionPool``.
        pipe: Not supported.
        deserializer: Not supported (values are jsonb).
        index: Semantic-search settings: ``dims``, ``embed``, ``fields``, and optionally
            ``distance_type`` (``cosine``, ``l2``, ``inner_product``) and ``ann_index_config``
            (``vector_type`` ``vector``/``halfvec``, ``m``, ``ef_construction``, ``ef_search``).
        ttl: TTL settings.
        search_order: The order of search results without a query: ``"updated"`` (the last
            written first, as LangGraph's SQL stores) or ``"written"`` (as ``InMemoryStore``).
    """

    conn_hint = "; async ones go to plait.store.postgres.aio.AsyncPostgresStore"

    def _start(self) -> None:
        # one connection, whose calls take turns anyway: the calls of waiting threads share a run
        if isinstance(self.conn, Connection):
            self._threads = ThreadGroups(
                self.engine, lambda make_step, alone: self._run(make_step, alone=alone)
            )
