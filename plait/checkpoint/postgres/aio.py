"""``AsyncPostgresSaver``: PostgreSQL checkpoints on psycopg's async connections, natively.

Every database call is awaited on the caller's event loop (no worker thread);
the storage format, the SQL and the engine are the sync saver's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

from plait.checkpoint._engine_async import NativeAsync
from plait.checkpoint._engine_ops import (
    Batch,
    Fetch,
    Op,
    Ops,
    Session,
    Setup,
    Step,
    adrive,
    arun_session,
)
from plait.checkpoint._lease import DEFAULT_TTL
from plait.checkpoint.postgres import _sql
from plait.checkpoint.postgres._merge import batch_statements
from plait.checkpoint.postgres._saver import PostgresBase, has_rows, stirred
from plait.checkpoint.postgres._shallow import ShallowSaver, deprecated
from plait.checkpoint.serde import Serializer

__all__ = ["AsyncPostgresSaver", "AsyncShallowPostgresSaver"]

_Conn = psycopg.AsyncConnection[Any]


async def _check_if_stirred(conn: _Conn) -> None:
    """The pool's check without a round trip unless the connection may be gone (see ``stirred``)."""
    if stirred(conn):
        await AsyncConnectionPool.check_connection(conn)


async def _step(cur: psycopg.AsyncCursor[Any], item: Step) -> Any:
    if item.many:
        await cur.executemany(item.sql, item.params)  # pyright: ignore[reportArgumentType]  # plait's own SQL text
        return cur.rowcount
    await cur.execute(item.sql, item.params)  # pyright: ignore[reportArgumentType]  # plait's own SQL text
    return await cur.fetchall() if has_rows(cur) else cur.rowcount


class AsyncPostgresSaver(NativeAsync, PostgresBase):
    """Checkpoints in PostgreSQL for asyncio code, on an ``AsyncConnection`` or ``AsyncConnectionPool``.

    Accepts the pool your application already has (any row factory). The sync
    methods work too, from threads other than the event loop's (they hand the
    call to the loop), as LangGraph's async saver does.

    Args:
        conn: A ``psycopg.AsyncConnection`` or ``psycopg_pool.AsyncConnectionPool``.
        serde: The serializer (register your own classes on it).
        cache_size: How many materialized values to keep in memory.
        lease_ttl: Seconds after which the thread lease of a killed process can be taken over.
    """

    def __init__(
        self,
        conn: _Conn | AsyncConnectionPool[Any],
        *,
        serde: Serializer | None = None,
        cache_size: int = 128,
        lease_ttl: float = DEFAULT_TTL,
    ) -> None:
        if not isinstance(conn, (psycopg.AsyncConnection, AsyncConnectionPool)):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
            raise TypeError(
                f"AsyncPostgresSaver needs a psycopg.AsyncConnection or psycopg_pool.AsyncConnectionPool, got "
                f"{type(conn).__name__}; use PostgresSaver for a sync Connection or ConnectionPool, or "
                "AsyncPostgresSaver.from_conn_string(dsn)."
            )
        self.conn = conn
        self.lock = asyncio.Lock()
        self.is_setup = False
        self.loop = asyncio.get_running_loop()
        super().__init__(serde=serde, cache_size=cache_size, lease_ttl=lease_ttl)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, pool_size: int = 1, **kwargs: Any
    ) -> AsyncGenerator[AsyncPostgresSaver, None]:
        """Open an ``AsyncConnectionPool`` on ``conn_string`` for the ``async with`` block.

        Args:
            conn_string: A libpq DSN or URL.
            pool_size: Maximum number of connections.
            **kwargs: Passed to the saver.
        """
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            conn_string,
            min_size=1,
            max_size=pool_size,
            open=False,
            check=_check_if_stirred,
            kwargs={"autocommit": True, "prepare_threshold": None},
        )
        await pool.open()
        try:
            yield cls(pool, **kwargs)
        finally:
            await pool.close()

    async def setup(self) -> None:  # type: ignore[override]  # LangGraph's async savers: await saver.setup()
        """Create or migrate the tables (done automatically on first write; idempotent)."""
        await self._aperform(Setup(True))

    def _scope_ops(self) -> Ops[tuple[str, bool]]:
        """Named from the connection settings (no query: the runtime asks for it on the event loop)."""
        params: dict[str, Any]
        if isinstance(self.conn, AsyncConnectionPool):
            conninfo = self.conn.conninfo
            # a pool may take a callable that makes the conninfo per connection: named by the callable then
            params = conninfo_to_dict(conninfo) if isinstance(conninfo, str) else {"conninfo": id(conninfo)}
        else:
            params = dict(self.conn.info.get_parameters())
        name = "postgres:" + "/".join(f"{k}={params[k]}" for k in sorted(params) if k != "password")
        return name, "pg_temp" not in str(params.get("options", ""))
        yield  # pragma: no cover - makes this a generator

    async def _aperform(self, op: Op) -> Any:
        if isinstance(op, Setup):
            return await adrive(self._setup_ops(op.write), self._aperform)
        # a statement runs to its end (a write to its commit or rollback) even when its caller is
        # cancelled meanwhile, as in a sync saver's worker thread: no connection is left mid-query
        return await asyncio.shield(self._on_connection(op))

    async def _on_connection(self, op: Op) -> Any:
        if isinstance(self.conn, AsyncConnectionPool):
            async with self.conn.connection() as conn:
                return await _perform_on(conn, op)
        async with self.lock:
            return await _perform_on(self.conn, op)


async def _perform_on(conn: _Conn, op: Op) -> Any:
    if isinstance(op, Fetch):
        if conn.autocommit:
            async with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                return await _step(cur, Step(op.sql, op.params))
        async with conn.transaction(), conn.cursor(row_factory=tuple_row, binary=True) as cur:
            return await _step(cur, Step(op.sql, op.params))
    if isinstance(op, Batch):
        steps, answers = batch_statements(op)  # a thread's puts as one statement
        if conn.autocommit:  # one multi-statement query: one implicit transaction, one round trip
            async with psycopg.AsyncClientCursor(conn, row_factory=tuple_row) as client:
                await client.execute(_sql.join_steps(client, steps))  # pyright: ignore[reportArgumentType, reportCallIssue]  # plait's own SQL text, values quoted by psycopg
                return answers(await _answers(client, steps))
        async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            return answers([await _step(cur, item) for item in steps])
    if not isinstance(op, Session):
        raise TypeError(f"not an operation on a connection: {op!r}")
    async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
        if not op.durable:
            await cur.execute(_sql.ASYNC_COMMIT)
        return await arun_session(op.body, lambda item: _step(cur, item))


async def _answers(client: psycopg.AsyncClientCursor[Any], steps: tuple[Step, ...]) -> list[Any]:
    """Each statement's rows (or row count) from one multi-statement query; a ``many`` step is one per set."""
    answers: list[Any] = []
    for item in steps:
        count = len(item.params) if item.many else 1
        rows: list[Any] = []
        total = 0
        for i in range(count):
            if has_rows(client):
                rows.extend(await client.fetchall())
            else:
                total += max(client.rowcount, 0)
            if i < count - 1 or item is not steps[-1]:
                client.nextset()
        answers.append(rows if rows or has_rows(client) else total)
    return answers


class AsyncShallowPostgresSaver(ShallowSaver, AsyncPostgresSaver):
    """An :class:`AsyncPostgresSaver` keeping only each thread namespace's newest checkpoint
    (deprecated, as in LangGraph: prefer ``durability="exit"``; see ``checkpoint.postgres.shallow``).

    Args:
        conn: A ``psycopg.AsyncConnection`` or ``psycopg_pool.AsyncConnectionPool``.
        **kwargs: As :class:`AsyncPostgresSaver` takes them.
    """

    def __init__(self, conn: Any, **kwargs: Any) -> None:
        deprecated(type(self).__name__)
        super().__init__(conn, **kwargs)
