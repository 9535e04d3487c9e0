"""``PostgresStore``: the long-term store in PostgreSQL (psycopg 3, sync connections or pools)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from psycopg import Connection, errors
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool
from typing_extensions import LiteralString, Self

from plait.store._embed import Embedded
from plait.store._engine import Prepared
from plait.store._group import ThreadGroups
from plait.store._sqlstore import MakeStep, SearchOrder, SqlStore, now
from plait.store._statement import Rows, Sql, Step, drive
from plait.store.base import IndexConfig, Result, TTLConfig
from plait.store.postgres._sql import MIGRATIONS, PostgresDialect, setup_step

RETRIES = 5
"""Runs of a batch whose transaction PostgreSQL rolled back as a deadlock victim (or a
serialization failure): nothing of it was applied, so it is run again, after a short random wait."""
RETRIED = (errors.DeadlockDetected, errors.SerializationFailure)

__all__ = ["PostgresStore", "ann_settings", "check_options", "pool_args"]


def ann_settings(index: IndexConfig | None) -> dict[str, Any]:
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


def check_options(pipe: Any, deserializer: Any) -> None:
    """Reject LangGraph options plait does not implement."""
    if pipe is not None:
        raise NotImplementedError(
            "PostgresStore(pipe=...): pass a connection or pool; use pipeline=True in from_conn_string"
        )
    if deserializer is not None:
        raise NotImplementedError(
            "PostgresStore(deserializer=...): plait stores values as jsonb and reads dicts"
        )


class PostgresStore(SqlStore):
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

    MIGRATIONS: Sequence[str] = MIGRATIONS
    """The DDL of the items' table that :meth:`setup` runs (each statement idempotent)."""
    distances = ("cosine", "l2", "inner_product")

    def __init__(
        self,
        conn: Connection[Any] | ConnectionPool[Any],
        *,
        pipe: Any = None,
        deserializer: Any = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search_order: SearchOrder = "updated",
    ) -> None:
        """Create the store (see the class docstring)."""
        check_options(pipe, deserializer)
        if not isinstance(conn, (Connection, ConnectionPool)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"PostgresStore needs a psycopg Connection or ConnectionPool, got {type(conn).__name__}; "
                "async ones go to plait.store.postgres.aio.AsyncPostgresStore"
            )
        dialect = PostgresDialect(
            index.get("dims") if index else None,
            ann_settings(index),
            str((index or {}).get("distance_type") or "cosine"),
        )
        super().__init__(dialect, index=index, ttl=ttl, search_order=search_order)
        self.dialect = dialect
        self.conn = conn
        self.pipeline = False
        self.lock = threading.Lock()
        self.is_setup = False
        self._plain: Any = None  # an executor on a cursor of ``conn`` (a Connection), made on first use
        self._threads = ThreadGroups(self.engine, lambda make_step, alone: self._run(make_step, alone=alone))

    @classmethod
    @contextmanager
    def from_conn_string(  # noqa: PLR0913 - LangGraph's signature
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: dict[str, Any] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search_order: SearchOrder = "updated",
    ) -> Generator[Self, None, None]:
        """Connect (one connection, or a pool with ``pool_config``) for the ``with`` block.

        Args:
            conn_string: A libpq DSN or URL.
            pipeline: Send each batch's statements in psycopg pipeline mode.
            pool_config: ``min_size``, ``max_size`` and ``kwargs`` of a ``ConnectionPool``.
            index: Semantic-search settings.
            ttl: TTL settings.
            search_order: The order of search results without a query (``"updated"`` or ``"written"``).
        """
        options: dict[str, Any] = {"index": index, "ttl": ttl, "search_order": search_order}
        if pool_config is not None:
            min_size, max_size, kwargs = pool_args(pool_config)
            with ConnectionPool(
                conn_string, min_size=min_size, max_size=max_size, kwargs=kwargs, open=True
            ) as pool:
                yield from cls._serve(pool, pipeline, options)
        else:
            with Connection.connect(conn_string, autocommit=True) as conn:
                yield from cls._serve(conn, pipeline, options)

    @classmethod
    def _serve(cls, conn: Any, pipeline: bool, options: dict[str, Any]) -> Generator[Self, None, None]:
        store = cls(conn, **options)
        store.pipeline = pipeline
        try:
            yield store
        finally:
            store._sweeper.stop(5)

    def setup(self) -> None:
        """Create the tables, the pgvector extension and HNSW index when available (idempotent)."""
        self._run(self._setup_step, setup=True)

    def _setup_step(self, _: float) -> Step:
        d = self.dialect
        d.vector = yield from setup_step(list(self.MIGRATIONS), d.dims, d.ann, d.distance)
        self.is_setup = True

    @contextmanager
    def _connection(self) -> Generator[Connection[Any], None, None]:
        if isinstance(self.conn, ConnectionPool):
            with self.conn.connection() as conn:
                yield conn
        else:
            with self.lock:
                yield self.conn

    @contextmanager
    def _cursor(self) -> Generator[Any, None, None]:
        """A cursor (rows as dicts) on the store's connection, for SQL of your own (LangGraph's hook)."""
        with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            yield cur

    def _run(self, make_step: MakeStep, *, setup: bool = False, alone: bool = False) -> Any:
        for attempt in range(1, RETRIES + 1):
            try:
                return self._run_once(make_step, setup=setup, alone=alone)
            except RETRIED:
                if attempt == RETRIES:
                    raise
                time.sleep(random.uniform(0.002, 0.02) * attempt)  # noqa: S311 - jitter, not security
        raise AssertionError("unreachable")

    def _run_once(self, make_step: MakeStep, *, setup: bool, alone: bool) -> Any:
        if (
            alone
            and self.is_setup
            and not self.pipeline
            and isinstance(self.conn, Connection)
            and self.conn.autocommit
        ):
            with self.lock:  # the one connection, each statement committing itself: its own cursor, kept
                if self._plain is None:
                    self._plain = _executor(self.conn)
                return drive(make_step(now()), self._plain)
        with self._connection() as conn:
            if not self.is_setup and not setup:
                with conn.transaction():
                    drive(self._setup_step(0.0), _executor(conn))
            if alone and conn.autocommit and not self.pipeline:  # each statement commits itself
                return drive(make_step(now()), _executor(conn))
            with conn.transaction():
                if self.pipeline:
                    with conn.pipeline() as pipe:
                        return drive(make_step(now()), _executor(conn, pipe))
                return drive(make_step(now()), _executor(conn))

    def _transact(self, make_step: MakeStep, *, alone: bool = False) -> Any:
        return self._run(make_step, alone=alone)

    def _run_prepared(self, prepared: Prepared, embedded: Embedded | None) -> list[Result]:
        """On one connection, whose calls take turns anyway, the calls of threads that wait share a run."""
        if isinstance(self.conn, Connection):
            return self._threads.run(prepared, embedded)
        return super()._run_prepared(prepared, embedded)


def _literal(text: str) -> LiteralString:
    """The store's SQL is built from constants and placeholders only (values travel as parameters)."""
    return text  # pyright: ignore[reportReturnType]


def _executor(conn: Connection[Any], pipe: Any = None) -> Any:
    cursor = conn.cursor(row_factory=tuple_row)

    def execute(sql: Sql) -> Rows:
        if sql.many:
            cursor.executemany(_literal(sql.text), sql.params)
            return []
        cursor.execute(_literal(sql.text), sql.params)
        if pipe is not None:
            pipe.sync()  # results are known only after a sync in pipeline mode
        return cursor.fetchall() if cursor.description is not None else []

    return execute
