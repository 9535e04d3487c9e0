"""``AsyncSqliteSaver``: :class:`~plait.checkpoint.sqlite.SqliteSaver` for asyncio code.

It uses the standard library's ``sqlite3`` (no ``aiosqlite`` needed): every
database call runs in a worker thread, serialised by the saver's lock, so the
event loop is never blocked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from plait.checkpoint.sqlite._saver import SqliteSaver

__all__ = ["AsyncSqliteSaver"]


class AsyncSqliteSaver(SqliteSaver):
    """A :class:`SqliteSaver` whose ``a``-methods run in worker threads.

    The sync methods keep working too, so one saver can serve both kinds of code.
    """

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]  # LangGraph's async savers: `async with` it
        cls, path: str | Path, **kwargs: Any
    ) -> AsyncGenerator[AsyncSqliteSaver, None]:
        """Open the database at ``path`` (WAL mode) for the ``async with`` block.

        Args:
            path: A file path, or ``":memory:"``.
            **kwargs: Passed to the saver.
        """
        manager = super().from_conn_string(path, **kwargs)
        saver = await asyncio.to_thread(manager.__enter__)
        try:
            yield saver
        finally:
            await asyncio.to_thread(manager.__exit__, None, None, None)

    async def setup(self) -> None:  # type: ignore[override]  # LangGraph's async savers: await saver.setup()
        """Create or migrate the tables (done automatically on first use; idempotent)."""
        await asyncio.to_thread(self._create_tables)
