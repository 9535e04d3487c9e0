"""``AsyncSqliteSaver``: SQLite checkpoints for asyncio code, over ``aiosqlite``.

Needs the ``sqlite-aio`` extra (``pip install 'plait[sqlite-aio]'``). Every call
is awaited on the caller's event loop; aiosqlite runs the one connection's
statements in its own thread. The file, the SQL and the engine are
:class:`~plait.checkpoint.sqlite.SqliteSaver`'s, so both can open the same file.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

try:
    import aiosqlite
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "plait.checkpoint.sqlite.aio needs aiosqlite; install it with: pip install 'plait[sqlite-aio]'"
    ) from exc

from plait.checkpoint._engine import SqlSaverBase
from plait.checkpoint._engine_async import NativeAsync
from plait.checkpoint._engine_ops import Batch, Fetch, Op, Ops, Setup, Step, arun_session
from plait.checkpoint._lease import DEFAULT_TTL
from plait.checkpoint.serde import Serializer
from plait.checkpoint.sqlite import _sql
from plait.checkpoint.sqlite._saver import migrate_body

__all__ = ["AsyncSqliteSaver"]


async def _step(conn: aiosqlite.Connection, item: Step) -> Any:
    if item.many:
        cur = await conn.executemany(item.sql, item.params)
        return cur.rowcount
    cur = await conn.execute(item.sql, item.params)
    description: Any = cur.description  # None for statements that return no rows (typed as always set)
    return await cur.fetchall() if description is not None else cur.rowcount


class AsyncSqliteSaver(NativeAsync, SqlSaverBase):
    """Checkpoints in a SQLite file for asyncio code (aiosqlite), natively awaited.

    Args:
        conn: An open ``aiosqlite.Connection``.
        serde: The serializer (register your own classes on it).
        cache_size: How many materialized values to keep in memory.
        lease_ttl: Seconds after which the thread lease of a killed process can be taken over.
    """

    sql = _sql

    def __init__(
        self,
        conn: aiosqlite.Connection,
        *,
        serde: Serializer | None = None,
        cache_size: int = 128,
        lease_ttl: float = DEFAULT_TTL,
    ) -> None:
        if not isinstance(conn, aiosqlite.Connection):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
            raise TypeError(
                f"AsyncSqliteSaver needs an aiosqlite.Connection, got {type(conn).__name__}; "
                "use AsyncSqliteSaver.from_conn_string(path), or SqliteSaver for a sqlite3.Connection"
            )
        self.conn = conn
        self.lock = asyncio.Lock()
        self.is_setup = False
        self.loop = asyncio.get_running_loop()
        self._path: str | None = None
        super().__init__(serde=serde, cache_size=cache_size, lease_ttl=lease_ttl)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, path: str | Path, **kwargs: Any
    ) -> AsyncGenerator[AsyncSqliteSaver, None]:
        """Open (creating if needed) the database file at ``path`` for the ``async with`` block.

        Args:
            path: A file path, or ``":memory:"``.
            **kwargs: Passed to the saver.
        """
        async with aiosqlite.connect(os.fspath(path)) as conn:
            saver = cls(conn, **kwargs)
            saver._path = "" if str(path) == ":memory:" else os.path.realpath(path)
            yield saver

    async def setup(self) -> None:  # type: ignore[override]  # LangGraph's async savers: await saver.setup()
        """Create or migrate the tables (done automatically on first write; idempotent)."""
        await self._aperform(Setup(True))

    def _scope_ops(self) -> Ops[tuple[str, bool]]:
        """The database file, known without a query (the runtime asks for it on the event loop)."""
        if not self._path:
            return f"sqlite-memory:{id(self)}", False
        return f"sqlite:{self._path}", True
        yield  # pragma: no cover - makes this a generator

    async def _aperform(self, op: Op) -> object:
        async with self.lock:
            conn = self.conn
            if isinstance(op, Setup):
                return await self._create_tables(op.write)
            if isinstance(op, Fetch):
                return await (await conn.execute(op.sql, op.params)).fetchall()
            await conn.execute("BEGIN IMMEDIATE")
            try:
                if isinstance(op, Batch):
                    answer: Any = [await _step(conn, item) for item in op.steps]
                else:
                    answer = await arun_session(op.body, lambda item: _step(conn, item))
            except BaseException:
                await conn.rollback()
                raise
            await conn.commit()
            return answer

    async def _create_tables(self, write: bool) -> bool:
        conn = self.conn
        names = {r[0] for r in await (await conn.execute(_sql.SCHEMA_NAMES)).fetchall()}
        if "plait_meta" not in names and not write:
            return False
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",
            "PRAGMA wal_autocheckpoint=32",
            "PRAGMA journal_size_limit=0",
        ):
            await conn.execute(pragma)
        await conn.execute("BEGIN IMMEDIATE")
        try:
            await arun_session(migrate_body(), lambda item: _step(conn, item))
        except BaseException:
            await conn.rollback()
            raise
        await conn.commit()
        self.is_setup = True
        return True
