"""PostgreSQL backend: :class:`PostgresSaver` (psycopg 3, optional psycopg_pool), and what it shares with the async one."""

from __future__ import annotations

import select
import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import pq
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool
from typing_extensions import Self

from plait.checkpoint._engine import SqlSaverBase
from plait.checkpoint._engine_ops import Batch, Fetch, Op, Ops, Session, Setup, Step, drive, run_session
from plait.checkpoint._engine_read import Thread
from plait.checkpoint._engine_sql import PutRows, WriteRow
from plait.checkpoint._lease import DEFAULT_TTL
from plait.checkpoint.postgres import _sql
from plait.checkpoint.postgres._functions import FUNCTION_BODIES, FUNCTIONS, function_body
from plait.checkpoint.postgres._merge import batch_statements
from plait.checkpoint.serde import Serializer
from plait.errors import SchemaVersionError

__all__ = ["PostgresBase", "PostgresSaver", "check_if_stirred", "has_rows", "migrate_body", "stirred"]

IDENTITY = (
    # the server's identity, whatever route reached it (TCP, another host name, a unix socket)
    "SELECT (SELECT system_identifier FROM pg_control_system())::text, current_setting('port'), "
    "current_database(), current_schema(), pg_my_temp_schema()::regnamespace::text"
)


def migrate_body() -> Generator[Step, Any, None]:
    """Create or migrate plait's tables, under a lock (several processes may start at once)."""
    yield Step(_sql.LOCK, [])
    has_plait, legacy, _ = (yield Step(_sql.PROBE, []))[0]
    done = 0
    if legacy and not has_plait:
        present = {r[0] for r in (yield Step(_sql.LEGACY_PRESENT, [list(_sql.LEGACY_TABLES)]))}
        steps = _sql.legacy_steps(present)
        done = int((yield steps[0])[0][0])
        for item in steps[1:]:  # noqa: UP028 - a list iterator cannot take the answers sent
            yield item
    yield Step(_sql.META_TABLE, [])
    for target in range(1, done + 1):
        yield Step(_sql.SET_META, [target])
    row = (yield Step(_sql.GET_META, []))[0]
    version = int(row[0]) if row and row[0] is not None else 0
    if version > _sql.SCHEMA_VERSION:
        raise SchemaVersionError(version, _sql.SCHEMA_VERSION)
    for target in range(version + 1, _sql.SCHEMA_VERSION + 1):
        for statement in _sql.MIGRATIONS[target]:
            yield Step(statement, [])
        yield Step(_sql.SET_META, [target])
    # CREATE OR REPLACE of an unchanged function still makes every connection compile it again
    bodies = dict((yield Step(FUNCTION_BODIES, [list(FUNCTIONS)])))
    for name, create in FUNCTIONS.items():
        if bodies.get(name) != function_body(create):
            yield Step(create, [])


class PostgresBase(SqlSaverBase):
    """What the sync and async PostgreSQL savers share: the SQL, setup and migrations."""

    sql = _sql
    _temporary = False

    def _setup_ops(self, write: bool) -> Ops[bool]:
        has_plait, legacy, _ = (yield Fetch(_sql.PROBE, []))[0]
        if not (has_plait or legacy or write):
            return False  # a read of a database without plait's tables creates nothing
        yield Session(migrate_body())
        self._temporary = bool((yield Fetch(_sql.TEMPORARY, []))[0][0])
        if self._temporary:  # PostgreSQL finds functions in pg_temp only when named with it
            self._leases.sql = _sql.LEASE_TEMP
        self.is_setup = True
        return True

    def _put_ops(self, rows: PutRows) -> Ops[tuple[str | None, bool]]:
        return _sql.put_ops(rows, self._temporary)

    def _writes_steps(
        self, thread: Thread, cid: str | None, task_id: str, rows: Sequence[WriteRow]
    ) -> tuple[Step, ...]:
        return _sql.writes_steps(thread, cid, task_id, rows, self._temporary)

    def _scope_ops(self) -> Ops[tuple[str, bool]]:
        """Server, database and schema; temporary schemas (``pg_temp``) are private to a connection."""
        addr, port, database, schema, temp = (yield Fetch(IDENTITY, []))[0]
        private = schema is None or schema == temp or schema.startswith("pg_temp")
        return f"postgres:{addr}:{port}/{database}/{schema}", not private


def stirred(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether an idle connection received something (the server closed it, or sent an error or notice).

    A local poll of the socket, no round trip: an idle autocommit connection receives nothing
    unless the server ends it (``pg_terminate_backend``, a restart), which is what needs a ping.
    """
    try:
        ready, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(ready)


def check_if_stirred(conn: psycopg.Connection[Any]) -> None:
    """The pool's check: ping a connection only when :func:`stirred` says it may be gone.

    ``ConnectionPool.check_connection`` pings on every checkout, one more round trip per
    statement; this costs a ``select()`` call.
    """
    if stirred(conn):
        ConnectionPool.check_connection(conn)


_ROWS = tuple(
    getattr(pq.ExecStatus, name)
    for name in ("TUPLES_OK", "SINGLE_TUPLE", "TUPLES_CHUNK")  # TUPLES_CHUNK: psycopg 3.2 on
    if hasattr(pq.ExecStatus, name)
)


def has_rows(cur: psycopg.Cursor[object] | psycopg.AsyncCursor[object]) -> bool:
    """Whether the cursor's current result is a set of rows (``cur.description is not None``,
    without building the column descriptions that property makes each time it is read)."""
    result = cur.pgresult
    return result is not None and result.status in _ROWS


def step(cur: psycopg.Cursor[Any], item: Step) -> Any:
    """Run one statement; its rows, or its row count when it returns none."""
    if item.many:
        cur.executemany(item.sql, item.params)  # pyright: ignore[reportArgumentType]  # plait's own SQL text
        return cur.rowcount
    cur.execute(item.sql, item.params)  # pyright: ignore[reportArgumentType]  # plait's own SQL text
    return cur.fetchall() if has_rows(cur) else cur.rowcount


class PostgresSaver(PostgresBase):
    """Checkpoints in PostgreSQL, with delta-encoded lists (see ``docs/storage.md``).

    Tables (``plait_checkpoints``, ``plait_checkpoint_blobs``, ``plait_checkpoint_writes``,
    ``plait_checkpoint_leases``, ``plait_migrations``) are created on first write, under an
    advisory lock, so several processes may start at once; :meth:`setup` does the same and
    is idempotent. They never collide with LangGraph's tables: one database may hold both.
    A put is one round trip (pipeline mode). Runs on one thread never interleave, even from
    several processes: each run holds a lease row (see :meth:`lease`). The connection's own
    row factory does not matter (cursors set theirs).

    Args:
        conn: A ``psycopg.Connection`` or a ``psycopg_pool.ConnectionPool``. A pool
            is preferred: broken connections are replaced (``check``) and
            several threads can work at once.
        serde: The serializer (register your own classes on it).
        cache_size: How many materialized values to keep in memory.
        lease_ttl: Seconds after which the thread lease of a killed process can be taken over.
    """

    def __init__(
        self,
        conn: psycopg.Connection[Any] | ConnectionPool[Any],
        *,
        serde: Serializer | None = None,
        cache_size: int = 128,
        lease_ttl: float = DEFAULT_TTL,
    ) -> None:
        if not isinstance(conn, (psycopg.Connection, ConnectionPool)):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
            name = type(self).__name__
            raise TypeError(
                f"{name} needs a psycopg.Connection or psycopg_pool.ConnectionPool, got {type(conn).__name__}; "
                f"use {name}.from_conn_string(dsn) to open one, or AsyncPostgresSaver "
                "(plait.checkpoint.postgres.aio) for an AsyncConnection or AsyncConnectionPool."
            )
        self.conn = conn
        self.lock = threading.RLock()
        self.is_setup = False
        super().__init__(serde=serde, cache_size=cache_size, lease_ttl=lease_ttl)

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, pool_size: int = 1, **kwargs: Any
    ) -> Generator[Self, None, None]:
        """Open a connection pool on ``conn_string`` for the ``with`` block.

        Connections use autocommit and no server-side prepared statements
        (``prepare_threshold=None``, safe behind PgBouncer). A connection the
        server closed (a terminated backend, a restart) is noticed before use,
        without a round trip, and replaced transparently.

        Args:
            conn_string: A libpq DSN or URL.
            pool_size: Maximum number of connections (one by default, like LangGraph;
                raise it when several threads share the saver).
            **kwargs: Passed to :class:`PostgresSaver`.
        """
        pool: ConnectionPool[Any] = ConnectionPool(
            conn_string,
            min_size=1,
            max_size=pool_size,
            open=True,
            check=check_if_stirred,
            kwargs={"autocommit": True, "prepare_threshold": None},
        )
        try:
            yield cls(pool, **kwargs)
        finally:
            pool.close()

    @contextmanager
    def _connection(self) -> Generator[psycopg.Connection[object], None, None]:
        if isinstance(self.conn, ConnectionPool):
            with self.conn.connection() as conn:
                yield conn
        else:
            with self.lock:
                yield self.conn

    def _perform(self, op: Op) -> object:
        if isinstance(op, Setup):
            return drive(self._setup_ops(op.write), self._perform)
        with self._connection() as conn:
            if isinstance(op, Fetch):
                if conn.autocommit:
                    with conn.cursor(row_factory=tuple_row, binary=True) as cur:
                        return step(cur, Step(op.sql, op.params))
                with conn.transaction(), conn.cursor(row_factory=tuple_row, binary=True) as cur:
                    return step(cur, Step(op.sql, op.params))
            if isinstance(op, Batch):
                return _batch(conn, op)
            with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
                if not op.durable:
                    cur.execute(_sql.ASYNC_COMMIT)
                return run_session(op.body, lambda item: step(cur, item))


def _batch(conn: psycopg.Connection[Any], op: Batch) -> list[Any]:
    """The statements in one transaction and one round trip: one multi-statement query (autocommit).

    A thread's puts go as one statement (:func:`batch_statements`); each step is still answered.
    """
    steps, answers = batch_statements(op)
    if not conn.autocommit:
        with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            return answers([step(cur, item) for item in steps])
    with psycopg.ClientCursor(conn, row_factory=tuple_row) as cur:
        cur.execute(_sql.join_steps(cur, steps))  # pyright: ignore[reportArgumentType, reportCallIssue]  # plait's own SQL text, values quoted by psycopg
        return answers(_answers(cur, steps))


def _answers(cur: psycopg.ClientCursor[object], steps: tuple[Step, ...]) -> list[object]:
    """Each statement's rows (or row count), from the result sets of one multi-statement query."""
    answers: list[object] = []
    for item in steps:
        count = len(item.params) if item.many else 1
        rows: list[Any] = []
        total = 0
        for i in range(count):
            if has_rows(cur):
                rows.extend(cur.fetchall())
            else:
                total += max(cur.rowcount, 0)
            if i < count - 1 or item is not steps[-1]:
                cur.nextset()
        answers.append(rows if rows or has_rows(cur) else total)
    return answers
