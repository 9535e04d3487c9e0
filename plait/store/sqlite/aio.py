"""``AsyncSqliteStore``: :class:`~plait.store.sqlite.SqliteStore` for asyncio code.

It uses the standard library's ``sqlite3``: each batch runs in a worker thread
(embeddings are awaited first, on the event loop), so the loop never blocks. The
batches of concurrent async calls share transactions (see :mod:`plait.store._group`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from plait.store._sqlstore import SearchOrder
from plait.store._ttl import AsyncSweeper, interval_seconds
from plait.store.base import IndexConfig, Op, Result, TTLConfig
from plait.store.sqlite._store import SqliteStore, connect

__all__ = ["AsyncSqliteStore"]


class AsyncSqliteStore(SqliteStore):
    """A :class:`SqliteStore` whose ``a``-methods, ``setup`` and TTL sweeper are async.

    The sync methods keep working from threads without a running event loop (e.g.
    sync nodes of a graph run with ``ainvoke``), so one store can serve both kinds
    of code; called from a coroutine they raise ``asyncio.InvalidStateError``, as
    they would block the event loop (use the ``a``-methods there).
    """

    shares_transactions = True

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`SqliteStore.batch`, refused on a running event loop (see the class docstring)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return super().batch(ops)
        raise asyncio.InvalidStateError(
            "a sync method of AsyncSqliteStore was called on a running event loop, which it would block; "
            "use the async methods (aget, aput, asearch, adelete, alist_namespaces, abatch) there"
        )

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]  # LangGraph's async stores: `async with` it
        cls,
        conn_string: str | Path,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search_order: SearchOrder = "updated",
    ) -> AsyncGenerator[AsyncSqliteStore, None]:
        """Open the database file (WAL mode) for the ``async with`` block.

        Args:
            conn_string: A file path, or ``":memory:"``.
            index: Semantic-search settings.
            ttl: TTL settings.
            search_order: The order of search results without a query (``"updated"`` or ``"written"``).
        """
        conn = await asyncio.to_thread(connect, conn_string)
        try:
            store = cls(conn, index=index, ttl=ttl, search_order=search_order)
            try:
                yield store
            finally:
                await store.stop_ttl_sweeper(5)
                await asyncio.to_thread(store._sweeper.stop, 5)
        finally:
            await asyncio.to_thread(conn.close)

    async def setup(self) -> None:  # type: ignore[override]  # LangGraph's async stores: await store.setup()
        """Create the tables (idempotent; also done on first use)."""
        await asyncio.to_thread(self._setup)

    async def sweep_ttl(self) -> int:  # type: ignore[override]  # async, as LangGraph's async stores
        """Delete the expired items now; returns how many."""
        return await asyncio.to_thread(SqliteStore.sweep_ttl, self)

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
        if not hasattr(self, "_async_sweeper"):
            self._async_sweeper = AsyncSweeper(self.sweep_ttl)
        return self._async_sweeper.start(interval_seconds(self.ttl_config, sweep_interval_minutes))

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        """Stop the sweeper task; ``True`` when it ended within ``timeout`` seconds."""
        sweeper: AsyncSweeper | None = getattr(self, "_async_sweeper", None)
        return True if sweeper is None else await sweeper.stop(timeout)
