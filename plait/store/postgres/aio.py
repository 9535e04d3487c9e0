"""``AsyncPostgresStore``: the PostgreSQL store on psycopg's async connections and pools.

Batches run natively on the event loop (``AsyncConnection`` or
``AsyncConnectionPool``, yours or one opened by :meth:`AsyncPostgresStore.from_conn_string`).
The batches of concurrent calls (``asyncio.gather`` of many ``aput``/``aget``,
or sync calls from several threads) share transactions, a few hundred at a time,
in the order they were made (see :mod:`plait.store._group`); if such a shared
transaction fails, each batch is run again alone, so only a faulty one fails. The
sync methods work from other threads (e.g. sync nodes of a graph run with
``ainvoke``): they hand the batch to the store's loop and wait.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import AsyncConnectionPool
from typing_extensions import LiteralString

from plait.store._embed import Embedded
from plait.store._engine import Prepared
from plait.store._sqlstore import MakeStep, SearchOrder, SqlStore, now
from plait.store._statement import Rows, Sql, Step, adrive
from plait.store._ttl import AsyncSweeper, interval_seconds
from plait.store.base import IndexConfig, Result, TTLConfig
from plait.store.postgres._sql import MIGRATIONS, PostgresDialect, setup_step
from plait.store.postgres._store import RETRIED, RETRIES, ann_settings, check_options, pool_args

__all__ = ["AsyncPostgresStore"]


class AsyncPostgresStore(SqlStore):
    """Async long-term store in PostgreSQL, with semantic search (pgvector) and TTL.

    Args:
        conn: A psycopg ``AsyncConnection`` (autocommit) or ``AsyncConnectionPool``.
        pipe: Not supported.
        deserializer: Not supported (values are jsonb).
        index: Semantic-search settings (see :class:`~plait.store.postgres.PostgresStore`).
        ttl: TTL settings.
        search_order: The order of search results without a query: ``"updated"`` (the last
            written first, as LangGraph's SQL stores) or ``"written"`` (as ``InMemoryStore``).
    """

    MIGRATIONS: Sequence[str] = MIGRATIONS
    """The DDL of the items' table that :meth:`setup` runs (each statement idempotent)."""
    distances = ("cosine", "l2", "inner_product")
    shares_transactions = True

    def __init__(
        self,
        conn: AsyncConnection[Any] | AsyncConnectionPool[Any],
        *,
        pipe: Any = None,
        deserializer: Any = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search_order: SearchOrder = "updated",
    ) -> None:
        """Create the store (see the class docstring); call it on the event loop that will use it."""
        check_options(pipe, deserializer)
        if not isinstance(conn, (AsyncConnection, AsyncConnectionPool)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"AsyncPostgresStore needs a psycopg AsyncConnection or AsyncConnectionPool, got {type(conn).__name__}"
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
        self.lock = asyncio.Lock()
        self.is_setup = False
        self.loop = asyncio.get_running_loop()
        self._async_sweeper = AsyncSweeper(self.sweep_ttl)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # noqa: PLR0913 - LangGraph's signature
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: dict[str, Any] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search_order: SearchOrder = "updated",
    ) -> AsyncGenerator[AsyncPostgresStore, None]:
        """Connect (one connection, or a pool with ``pool_config``) for the ``async with`` block.

        Args:
            conn_string: A libpq DSN or URL.
            pipeline: Send each batch's statements in psycopg pipeline mode.
            pool_config: ``min_size``, ``max_size`` and ``kwargs`` of an ``AsyncConnectionPool``.
            index: Semantic-search settings.
            ttl: TTL settings.
            search_order: The order of search results without a query (``"updated"`` or ``"written"``).
        """
        options: dict[str, Any] = {"index": index, "ttl": ttl, "search_order": search_order}
        if pool_config is not None:
            min_size, max_size, kwargs = pool_args(pool_config)
            async with AsyncConnectionPool(
                conn_string, min_size=min_size, max_size=max_size, kwargs=kwargs, open=False
            ) as pool:
                store = cls(pool, **options)
                store.pipeline = pipeline
                try:
                    yield store
                finally:
                    await store.stop_ttl_sweeper(5)
        else:
            async with await AsyncConnection.connect(conn_string, autocommit=True) as conn:
                store = cls(conn, **options)
                store.pipeline = pipeline
                try:
                    yield store
                finally:
                    await store.stop_ttl_sweeper(5)

    async def setup(self) -> None:  # LangGraph's async stores: await store.setup()
        """Create the tables, the pgvector extension and HNSW index when available (idempotent)."""
        await self._run(self._setup_step, setup=True)

    def _setup_step(self, _: float) -> Step:
        d = self.dialect
        d.vector = yield from setup_step(list(self.MIGRATIONS), d.dims, d.ann, d.distance)
        self.is_setup = True

    @asynccontextmanager
    async def _connection(self) -> AsyncGenerator[AsyncConnection[Any], None]:
        if isinstance(self.conn, AsyncConnectionPool):
            async with self.conn.connection() as conn:
                yield conn
        else:
            async with self.lock:
                yield self.conn

    @asynccontextmanager
    async def _cursor(self) -> AsyncGenerator[Any, None]:
        """A cursor (rows as dicts) on the store's connection, for SQL of your own (LangGraph's hook)."""
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            yield cur

    async def _run(self, make_step: MakeStep, *, setup: bool = False, alone: bool = False) -> Any:
        for attempt in range(1, RETRIES + 1):
            try:
                return await self._run_once(make_step, setup=setup, alone=alone)
            except RETRIED:
                if attempt == RETRIES:
                    raise
                await asyncio.sleep(random.uniform(0.002, 0.02) * attempt)  # noqa: S311 - jitter, not security
        raise AssertionError("unreachable")

    async def _run_once(self, make_step: MakeStep, *, setup: bool, alone: bool) -> Any:
        async with self._connection() as conn:
            if not self.is_setup and not setup:
                async with conn.transaction():
                    await adrive(self._setup_step(0.0), _executor(conn))
            if alone and conn.autocommit and not self.pipeline:  # each statement commits itself
                return await adrive(make_step(now()), _executor(conn))
            async with conn.transaction():
                if self.pipeline:
                    async with conn.pipeline() as pipe:
                        return await adrive(make_step(now()), _executor(conn, pipe))
                return await adrive(make_step(now()), _executor(conn))

    async def _atransact(self, make_step: MakeStep, *, alone: bool = False) -> Any:
        """Run a step on this loop (batches reach it through the store's call groups)."""
        return await self._run(make_step, alone=alone)

    def _on_loop(self) -> asyncio.AbstractEventLoop:
        """The store's loop, for a sync call from another thread (refused on that loop: it would block it)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            raise asyncio.InvalidStateError(
                "Synchronous calls to AsyncPostgresStore detected in the main event loop; "
                "use the async methods (aget, aput, asearch, abatch) here"
            )
        return self.loop

    def _run_prepared(self, prepared: Prepared, embedded: Embedded | None) -> list[Result]:
        """A sync batch from another thread: on the store's loop, with the batches of concurrent calls."""
        loop = self._on_loop()
        assert self._groups is not None  # noqa: S101 - set in __init__
        return asyncio.run_coroutine_threadsafe(self._groups.run(prepared, embedded), loop).result()

    def _transact(self, make_step: MakeStep, *, alone: bool = False) -> Any:
        """Run a step from another thread (e.g. the sweeper's), on the store's loop."""
        loop = self._on_loop()
        return asyncio.run_coroutine_threadsafe(self._run(make_step, alone=alone), loop).result()

    async def sweep_ttl(self) -> int:  # type: ignore[override]  # async, as LangGraph's async stores
        """Delete the expired items now; returns how many."""
        return int(await self._run(self.engine.sweep))

    async def start_ttl_sweeper(  # type: ignore[override]  # async, as LangGraph's async stores
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep expired items periodically in an asyncio task.

        Args:
            sweep_interval_minutes: Minutes between sweeps (default: the ``ttl``
                setting's ``sweep_interval_minutes``, else 5).

        Returns:
            The task.
        """
        return self._async_sweeper.start(interval_seconds(self.ttl_config, sweep_interval_minutes))

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        """Stop the sweeper task; ``True`` when it ended within ``timeout`` seconds."""
        return await self._async_sweeper.stop(timeout)


def _literal(text: str) -> LiteralString:
    """The store's SQL is built from constants and placeholders only (values travel as parameters)."""
    return text  # pyright: ignore[reportReturnType]


def _executor(conn: AsyncConnection[Any], pipe: Any = None) -> Any:
    cursor = conn.cursor(row_factory=tuple_row)

    async def execute(sql: Sql) -> Rows:
        if sql.many:
            await cursor.executemany(_literal(sql.text), sql.params)
            return []
        await cursor.execute(_literal(sql.text), sql.params)
        if pipe is not None:
            await pipe.sync()  # results are known only after a sync in pipeline mode
        return await cursor.fetchall() if cursor.description is not None else []

    return execute
