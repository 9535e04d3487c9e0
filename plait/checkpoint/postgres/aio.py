"""``AsyncPostgresSaver``: :class:`~plait.checkpoint.postgres.PostgresSaver` for asyncio code.

Database calls run in worker threads on a psycopg connection pool, so the
event loop is never blocked; the storage format is the sync saver's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from plait.checkpoint.postgres._saver import PostgresSaver

__all__ = ["AsyncPostgresSaver"]


class AsyncPostgresSaver(PostgresSaver):
    """A :class:`PostgresSaver` whose ``a``-methods run in worker threads."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]  # LangGraph's async savers: `async with` it
        cls, conn_string: str, *, pool_size: int = 4, **kwargs: Any
    ) -> AsyncGenerator[AsyncPostgresSaver, None]:
        """Open a connection pool on ``conn_string`` for the ``async with`` block.

        Args:
            conn_string: A libpq DSN or URL.
            pool_size: Maximum number of connections.
            **kwargs: Passed to the saver.
        """
        manager = super().from_conn_string(conn_string, pool_size=pool_size, **kwargs)
        saver = await asyncio.to_thread(manager.__enter__)
        try:
            yield saver
        finally:
            await asyncio.to_thread(manager.__exit__, None, None, None)

    async def setup(self) -> None:  # type: ignore[override]  # LangGraph's async savers: await saver.setup()
        """Create or migrate the tables (done automatically on first use; idempotent)."""
        await asyncio.to_thread(self._create_tables)
