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

from plait.store._embed import Embedded
from plait.store._engine import Prepared
from plait.store._sqlstore import MakeStep
from plait.store._ttl import AsyncSweeper, interval_seconds
from plait.store.base import Result
from plait.store.postgres._async_io import AsyncPostgresIO

__all__ = ["AsyncPostgresStore"]


class AsyncPostgresStore(AsyncPostgresIO):
    """Async long-term store in PostgreSQL, with semantic search (pgvector) and TTL.

    Create it on the event loop that will use it.

    Args:
        conn: A psycopg ``AsyncConnection`` (autocommit) or ``AsyncConnectionPool``.
        pipe: Not supported.
        deserializer: Not supported (values are jsonb).
        index: Semantic-search settings (see :class:`~plait.store.postgres.PostgresStore`).
        ttl: TTL settings.
        search_order: The order of search results without a query: ``"updated"`` (the last
            written first, as LangGraph's SQL stores) or ``"written"`` (as ``InMemoryStore``).
    """

    shares_transactions = True

    def _start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._async_sweeper = AsyncSweeper(self.sweep_ttl)

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

    def _transact(self, make_step: MakeStep, *, alone: bool = False) -> object:
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
