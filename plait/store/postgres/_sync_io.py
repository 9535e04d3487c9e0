# Generated from plait/store/postgres/_async_io.py by tools/unasync_gen.py -- do not edit.
"""The PostgreSQL stores' I/O: connect, set up, run a step in a transaction, retry deadlocks.

``_async_io.AsyncPostgresIO`` (the base of ``AsyncPostgresStore``) is the single source;
``tools/unasync_gen.py`` generates ``_sync_io.PostgresIO`` (the base of ``PostgresStore``) from it.
"""

from __future__ import annotations

import random
import threading
import time
from abc import abstractmethod
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import Any

from psycopg import Connection
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool
from typing_extensions import LiteralString, Self

from plait.store._sqlstore import MakeStep, SearchOrder, SqlStore, now
from plait.store._statement import Rows, Sql, Step, drive
from plait.store._ttl import Sweeper
from plait.store.base import IndexConfig, TTLConfig
from plait.store.postgres._settings import RETRIED, RETRIES, ann_settings, check_options, pool_args
from plait.store.postgres._sql import MIGRATIONS, PostgresDialect, setup_step

__all__ = ["PostgresIO"]


class PostgresIO(SqlStore):
    """Connections, setup and transactions of a PostgreSQL store (its ``__init__`` sets the attributes)."""

    MIGRATIONS: Sequence[str] = MIGRATIONS
    """The DDL of the items' table that :meth:`setup` runs (each statement idempotent)."""
    distances = ("cosine", "l2", "inner_product")
    conn_hint = ""
    """Added to the error for a connection of the wrong kind."""
    _sweeper: Sweeper

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
                f"{type(self).__name__} needs a psycopg {Connection.__name__} or "
                f"{ConnectionPool.__name__}, got {type(conn).__name__}{self.conn_hint}"
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
        self._plain: Any = None  # an executor on a cursor of ``conn`` (a connection), made on first use
        self._start()

    @abstractmethod
    def _start(self) -> None:
        """Set up what the store adds to the connection (called last by ``__init__``)."""

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
    ) -> Generator[Self, None]:
        """Connect (one connection, or a pool with ``pool_config``) for the ``with`` block.

        Args:
            conn_string: A libpq DSN or URL.
            pipeline: Send each batch's statements in psycopg pipeline mode.
            pool_config: ``min_size``, ``max_size`` and ``kwargs`` of a connection pool.
            index: Semantic-search settings.
            ttl: TTL settings.
            search_order: The order of search results without a query (``"updated"`` or ``"written"``).
        """
        options: dict[str, Any] = {"index": index, "ttl": ttl, "search_order": search_order}
        if pool_config is not None:
            min_size, max_size, kwargs = pool_args(pool_config)
            with ConnectionPool(
                conn_string, min_size=min_size, max_size=max_size, kwargs=kwargs, open=False
            ) as pool:
                store = cls(pool, **options)
                store.pipeline = pipeline
                try:
                    yield store
                finally:
                    store._sweeper.stop(5)
        else:
            with Connection.connect(conn_string, autocommit=True) as conn:
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
    def _connection(self) -> Generator[Connection[object], None]:
        if isinstance(self.conn, ConnectionPool):
            with self.conn.connection() as conn:
                yield conn
        else:
            with self.lock:
                yield self.conn

    @contextmanager
    def _cursor(self) -> Generator[object, None]:
        """A cursor (rows as dicts) on the store's connection, for SQL of your own (LangGraph's hook)."""
        with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            yield cur

    def _transact(self, make_step: MakeStep, *, alone: bool = False) -> Any:
        """Run a step in a transaction (with deadlock retries)."""
        return self._run(make_step, alone=alone)

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
