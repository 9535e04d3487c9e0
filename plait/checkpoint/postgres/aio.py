"""``AsyncPostgresSaver``: :class:`~plait.checkpoint.postgres.PostgresSaver` for asyncio code.

Database calls run in worker threads on a psycopg connection pool, so the
event loop is never blocked; the storage format is the sync saver's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from plait.checkpoint.base import CheckpointTuple
from plait.checkpoint.postgres._saver import PostgresSaver

__all__ = ["AsyncPostgresSaver"]

_DONE = object()


class AsyncPostgresSaver(PostgresSaver):
    """A :class:`PostgresSaver` whose ``a``-methods run in worker threads."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(cls, conn_string: str, *, pool_size: int = 4,  # type: ignore[override]
                               **kwargs: Any) -> AsyncIterator[AsyncPostgresSaver]:
        """Open a connection pool on ``conn_string`` for the ``async with`` block.

        Args:
            conn_string: A libpq DSN or URL.
            pool_size: Maximum number of connections.
            **kwargs: Passed to the saver.
        """
        manager = PostgresSaver.from_conn_string.__func__(cls, conn_string, pool_size=pool_size,  # type: ignore[attr-defined]
                                                          **kwargs)
        saver = await asyncio.to_thread(manager.__enter__)
        try:
            yield saver
        finally:
            await asyncio.to_thread(manager.__exit__, None, None, None)

    async def asetup(self) -> None:
        """Create or migrate the tables (done automatically on first use)."""
        await asyncio.to_thread(self.setup)

    async def alist(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first, streamed: each item is read when it is awaited."""
        items = self.list(config, filter=filter, before=before, limit=limit)
        while True:
            item = await asyncio.to_thread(next, items, _DONE)
            if item is _DONE:
                return
            yield item  # type: ignore[misc]
