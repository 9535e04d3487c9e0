"""PostgreSQL backend: :class:`PostgresSaver` (psycopg 3, optional psycopg_pool)."""

from __future__ import annotations

import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool
from typing_extensions import LiteralString, Self

from plait.checkpoint._engine import SqlSaverBase
from plait.checkpoint._lease import DEFAULT_TTL
from plait.checkpoint.postgres import _sql
from plait.checkpoint.serde import Serializer
from plait.errors import SchemaVersionError

__all__ = ["PostgresSaver"]


class PostgresSaver(SqlSaverBase):
    """Checkpoints in PostgreSQL, with delta-encoded lists (see ``docs/storage.md``).

    Tables are created on first use (under an advisory lock, so several
    processes may start at once); :meth:`setup` does the same and is idempotent.
    Runs on one thread never interleave, even from several processes: each run
    holds a lease row in ``checkpoint_leases`` (see :meth:`lease`). The
    connection's own row factory does not matter (cursors set theirs).

    Args:
        conn: A ``psycopg.Connection`` or a ``psycopg_pool.ConnectionPool``. A pool
            is preferred: broken connections are replaced (``check``) and
            several threads can work at once.
        serde: The serializer (register your own classes on it).
        cache_size: How many materialized values to keep in memory.
        lease_ttl: Seconds after which the thread lease of a killed process can be taken over.
    """

    sql = _sql

    def __init__(
        self,
        conn: psycopg.Connection[Any] | ConnectionPool[Any],
        *,
        serde: Serializer | None = None,
        cache_size: int = 128,
        lease_ttl: float = DEFAULT_TTL,
    ) -> None:
        super().__init__(serde=serde, cache_size=cache_size, lease_ttl=lease_ttl)
        if not isinstance(conn, (psycopg.Connection, ConnectionPool)):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
            name = type(self).__name__
            raise TypeError(
                f"{name} needs a psycopg.Connection or psycopg_pool.ConnectionPool, got {type(conn).__name__}; "
                f"use {name}.from_conn_string(dsn) to open one. (plait's async savers run psycopg's sync driver "
                "in worker threads, so AsyncConnection / AsyncConnectionPool are not accepted.)"
            )
        self.conn = conn
        self.lock = threading.RLock()
        self.is_setup = False

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, pool_size: int = 1, **kwargs: Any
    ) -> Generator[Self, None, None]:
        """Open a connection pool on ``conn_string`` for the ``with`` block.

        Connections use autocommit and no server-side prepared statements
        (``prepare_threshold=None``, safe behind PgBouncer) and are checked
        before use, so a dropped connection is replaced transparently.

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
            check=ConnectionPool.check_connection,
            kwargs={"autocommit": True, "prepare_threshold": None},
        )
        try:
            yield cls(pool, **kwargs)
        finally:
            pool.close()

    @contextmanager
    def _connection(self) -> Generator[psycopg.Connection[Any], None, None]:
        if isinstance(self.conn, ConnectionPool):
            with self.conn.connection() as conn:
                yield conn
        else:
            with self.lock:
                yield self.conn

    def setup(self) -> None:
        """Create or migrate the tables (done automatically on first use; idempotent)."""
        self._create_tables()

    def _create_tables(self) -> None:
        with self._tx() as cur:
            cur.execute(_sql.LOCK)
            cur.execute(_sql.META_TABLE)
            row = cur.execute(_sql.GET_META).fetchone()
            version = int(row[0]) if row and row[0] is not None else 0
            if version > _sql.SCHEMA_VERSION:
                raise SchemaVersionError(version, _sql.SCHEMA_VERSION)
            for target in range(version + 1, _sql.SCHEMA_VERSION + 1):
                for statement in _sql.MIGRATIONS[target]:
                    cur.execute(statement)
                cur.execute(_sql.SET_META, [target])
        self.is_setup = True

    def _setup_once(self) -> None:
        if not self.is_setup:
            self._create_tables()

    def _lease_scope(self) -> tuple[str, bool]:
        """Server, database and schema; temporary schemas (``pg_temp``) are private to a connection."""
        self._setup_once()
        row = self._fetch(
            # the server's identity, whatever route reached it (TCP, another host name, a unix socket)
            "SELECT (SELECT system_identifier FROM pg_control_system())::text, current_setting('port'), "
            "current_database(), current_schema(), pg_my_temp_schema()::regnamespace::text",
            [],
        )[0]
        addr, port, database, schema, temp = row
        private = schema is None or schema == temp or schema.startswith("pg_temp")
        return f"postgres:{addr}:{port}/{database}/{schema}", not private

    def _fetch(self, sql: LiteralString, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._connection() as conn:
            if conn.autocommit:
                with conn.cursor(row_factory=tuple_row) as cur:
                    return cur.execute(sql, list(params)).fetchall()
            with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
                return cur.execute(sql, list(params)).fetchall()

    @contextmanager
    def _tx(self) -> Generator[psycopg.Cursor[Any], None, None]:
        with self._connection() as conn, conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            yield cur
