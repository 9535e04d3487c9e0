"""The server's own tables (assistants, threads, runs, events, crons) on SQLite or PostgreSQL.

(The long-term store lives in :mod:`plait.store`'s tables on the same database: :mod:`plait.server._store`.)

SQL is written once with ``?`` placeholders; the PostgreSQL side turns them into ``%s``.
Values that are JSON documents are stored as text, so both databases read them the same way.
SQLite statements run on the event loop's thread (they take microseconds and the server owns
the only writer connection); PostgreSQL goes through a psycopg async pool.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

from typing_extensions import LiteralString

from plait.server._schema import pg_check, pg_migrate, sqlite_check, sqlite_functions, sqlite_migrate
from plait.server._wire import dumps, loads

__all__ = ["CONNECTION_WAIT", "Database", "PostgresDatabase", "SqliteDatabase", "Tx", "open_database"]

Row = dict[str, Any]

CONNECTION_WAIT = 5.0
"""Seconds a request waits for a pooled PostgreSQL connection (a database restarting, every connection
busy) before it is answered 503."""

_DDL: list[LiteralString] = [
    """CREATE TABLE IF NOT EXISTS plait_server_assistants (
        assistant_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, name TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS plait_server_assistant_versions (
        assistant_id TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL,
        PRIMARY KEY (assistant_id, version))""",
    """CREATE TABLE IF NOT EXISTS plait_server_threads (
        thread_id TEXT PRIMARY KEY, status TEXT NOT NULL, created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL, doc TEXT NOT NULL, vals TEXT)""",
    """CREATE TABLE IF NOT EXISTS plait_server_runs (
        run_id TEXT PRIMARY KEY, thread_id TEXT, assistant_id TEXT NOT NULL, status TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL, worker TEXT, lease_until DOUBLE PRECISION,
        attempt INTEGER NOT NULL DEFAULT 0, cancel TEXT, doc TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS plait_server_runs_queue ON plait_server_runs (status, created_at)",
    "CREATE INDEX IF NOT EXISTS plait_server_runs_thread ON plait_server_runs (thread_id, created_at)",
    # a thread's pending/running runs, checked by every new run and every run's end: only those rows
    """CREATE INDEX IF NOT EXISTS plait_server_runs_inflight ON plait_server_runs (thread_id, status)
        WHERE status IN ('pending', 'running')""",
    """CREATE TABLE IF NOT EXISTS plait_server_events (
        run_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE IF NOT EXISTS plait_server_crons (
        cron_id TEXT PRIMARY KEY, assistant_id TEXT NOT NULL, thread_id TEXT, enabled INTEGER NOT NULL,
        next_run DOUBLE PRECISION, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, doc TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS plait_server_crons_due ON plait_server_crons (next_run) WHERE enabled = 1",
    # deleting a thread or an assistant deletes its crons; searches filter by them
    "CREATE INDEX IF NOT EXISTS plait_server_crons_thread ON plait_server_crons (thread_id)",
    "CREATE INDEX IF NOT EXISTS plait_server_crons_assistant ON plait_server_crons (assistant_id)",
]


# Threads made before their values had a column of their own kept them inside ``doc``.
_ADDED_COLUMNS: list[tuple[LiteralString, LiteralString, LiteralString]] = [
    # (table, column, type) added after a release: tables made before get them at start-up
    ("plait_server_threads", "expires_at", "DOUBLE PRECISION"),
    ("plait_server_threads", "ttl_strategy", "TEXT"),
]
_AFTER_COLUMNS: list[LiteralString] = [
    """CREATE INDEX IF NOT EXISTS plait_server_threads_expiry ON plait_server_threads (expires_at)
        WHERE expires_at IS NOT NULL""",
]
_OLD_THREADS: LiteralString = "SELECT thread_id, doc FROM plait_server_threads WHERE vals IS NULL"
_MOVE_VALUES: LiteralString = "UPDATE plait_server_threads SET doc = ?, vals = ? WHERE thread_id = ?"


def _moved(rows: Sequence[Row]) -> list[tuple[str, str | None, str]]:
    """``(doc, vals, thread_id)`` for the old rows whose values are still inside ``doc``."""
    out: list[tuple[str, str | None, str]] = []
    for row in rows:
        doc: dict[str, object] = loads(row["doc"])
        if "values" in doc:
            values = doc.pop("values")
            vals = None if values is None else dumps(values).decode()
            out.append((dumps(doc).decode(), vals, row["thread_id"]))
    return out


class Tx(Protocol):
    """Statements inside one transaction."""

    async def fetch(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """All rows of a query, as dicts."""
        ...

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        """Execute a statement; the number of rows it changed."""
        ...


class Database(Protocol):
    """The server's database: one-statement helpers, transactions and notifications."""

    dialect: str
    target: str

    async def fetch(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """All rows of a query, as dicts."""
        ...

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        """Execute one statement in its own transaction."""
        ...

    def tx(self) -> Any:
        """``async with db.tx() as tx``: one transaction (SQLite: ``BEGIN IMMEDIATE``).

        Server bookkeeping commits without waiting for the disk on PostgreSQL (a crash of the
        database loses at most its last moments, which the lease sweep repairs); what a client
        is told is stored (a new run) asks for a durable commit in its own statement
        (``set_config('synchronous_commit', 'on', true)``).
        """
        ...

    async def notify(self, channel: str, payload: str) -> None:
        """Tell the other workers (PostgreSQL ``NOTIFY``; nothing to do on SQLite)."""
        ...

    async def listen(self, channels: Sequence[str], callback: Callable[[str, str], None]) -> None:
        """Call ``callback(channel, payload)`` for every notification until cancelled."""
        ...

    async def close(self) -> None:
        """Close the connections."""
        ...


class SqliteDatabase:
    """The tables in a SQLite file (one server process)."""

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self.target = path
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA busy_timeout=10000")
        sqlite_functions(self.conn)
        sqlite_check(self.conn, f"server database {path}")  # a newer plait's tables: refused untouched
        for ddl in _DDL:
            self.conn.execute(ddl)
        self._upgrade()
        sqlite_migrate(self.conn, f"server database {path}")
        self.lock = asyncio.Lock()

    def _upgrade(self) -> None:
        """Give old thread rows their values column (another process may be doing it too: checked
        inside the write transaction)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            columns = {r[1] for r in self.conn.execute("PRAGMA table_info(plait_server_threads)")}
            if "vals" not in columns:
                self.conn.execute("ALTER TABLE plait_server_threads ADD COLUMN vals TEXT")
                rows = [dict(r) for r in self.conn.execute(_OLD_THREADS)]
                self.conn.executemany(_MOVE_VALUES, _moved(rows))
            for table, column, kind in _ADDED_COLUMNS:
                if column not in {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            for ddl in _AFTER_COLUMNS:
                self.conn.execute(ddl)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    async def fetch(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """All rows of a query, as dicts."""
        return [dict(row) for row in self.conn.execute(sql, tuple(params)).fetchall()]

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        """Execute one statement (autocommit)."""
        if self.lock.locked():  # a transaction is open: wait for it rather than join it
            async with self.lock:
                return self.conn.execute(sql, tuple(params)).rowcount
        return self.conn.execute(sql, tuple(params)).rowcount

    @asynccontextmanager
    async def tx(self) -> AsyncGenerator[SqliteDatabase, None]:
        """One ``BEGIN IMMEDIATE`` transaction; statements of other tasks wait for it."""
        async with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield _SqliteTx(self.conn)  # type: ignore[misc]  # same fetch/run surface
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    async def notify(self, channel: str, payload: str) -> None:
        """Nothing: one SQLite server process has no one to tell."""

    async def listen(self, channels: Sequence[str], callback: Callable[[str, str], None]) -> None:
        """Nothing to listen to on SQLite: wait until cancelled."""
        await asyncio.Event().wait()

    async def close(self) -> None:
        """Close the connection."""
        self.conn.close()


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def fetch(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return [dict(row) for row in self.conn.execute(sql, tuple(params)).fetchall()]

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        return self.conn.execute(sql, tuple(params)).rowcount


def _pg(sql: str) -> str:
    return sql.replace("%", "%%").replace("?", "%s")


async def _configure(conn: Any) -> None:
    """Bookkeeping connections commit without waiting for the disk (see :meth:`Database.tx`), and
    compress the large values they write (a thread's values, a run's outcome) with lz4 where the
    server has it: a fraction of pglz's CPU."""
    await conn.execute("SET synchronous_commit TO off")
    await conn.execute(
        "SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings "
        "WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
    )


class PostgresDatabase:
    """The tables in PostgreSQL (any number of server processes)."""

    dialect = "postgres"

    def __init__(self, dsn: str, pool: Any) -> None:
        self.target = dsn
        self.pool = pool

    @classmethod
    async def open(cls, dsn: str, *, size: int = 12) -> PostgresDatabase:
        """Open a pool on ``dsn`` and create the tables."""
        try:
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "a PostgreSQL --db needs the 'postgres' extra: pip install 'plait[postgres]'"
            ) from exc
        pool = AsyncConnectionPool(
            dsn,
            min_size=2,
            max_size=size,
            open=False,
            kwargs={"autocommit": True},
            configure=_configure,
            timeout=CONNECTION_WAIT,
        )
        await pool.open()
        try:
            async with pool.connection() as conn:
                await _pg_set_up(conn)
        except BaseException:
            await pool.close()
            raise
        return cls(dsn, pool)

    async def fetch(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """All rows of a query, as dicts."""
        async with self.pool.connection() as conn:
            return await _PgTx(conn).fetch(sql, params)

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        """Execute one statement (autocommit)."""
        async with self.pool.connection() as conn:
            return await _PgTx(conn).run(sql, params)

    @asynccontextmanager
    async def tx(self) -> AsyncGenerator[Tx, None]:
        """One transaction on a pooled connection."""
        async with self.pool.connection() as conn, conn.transaction():
            yield _PgTx(conn)

    async def notify(self, channel: str, payload: str) -> None:
        """``NOTIFY channel, payload``."""
        await self.run("SELECT pg_notify(?, ?)", (channel, payload))

    async def listen(self, channels: Sequence[str], callback: Callable[[str, str], None]) -> None:
        """Call ``callback`` for every notification on ``channels`` until cancelled (reconnecting)."""
        import psycopg
        import psycopg.sql

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.target, autocommit=True) as conn:
                    for channel in channels:
                        await conn.execute(
                            psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(channel))
                        )
                    callback("", "")  # (re)connected: listeners re-check what they may have missed
                    async for note in conn.notifies():
                        callback(note.channel, note.payload)
            except psycopg.OperationalError:
                await asyncio.sleep(0.5)

    async def close(self) -> None:
        """Close the pool."""
        await self.pool.close()


_INDEX_NAME = re.compile(r"CREATE INDEX IF NOT EXISTS (\w+)")


async def _pg_create(conn: Any, ddl: str) -> None:
    """Run a ``CREATE ... IF NOT EXISTS``; an index only when it is missing (even when it exists,
    ``CREATE INDEX IF NOT EXISTS`` first takes a lock that holds every writer of its table back)."""
    found = _INDEX_NAME.match(ddl)
    if found is not None:
        cur = await conn.execute(  # in the schema the tables are made in, not elsewhere on the path
            "SELECT to_regclass(quote_ident(current_schema()) || '.' || %s) IS NOT NULL", (found.group(1),)
        )
        row = await cur.fetchone()
        if row is not None and row[0]:
            return
    await conn.execute(ddl)


async def _pg_set_up(conn: Any) -> None:
    """Create the tables and bring them to this plait's version, under the set-up lock."""
    await conn.execute("SELECT pg_advisory_lock(728361)")
    try:
        found = await pg_check(conn, "server database")  # a newer plait's tables: refused untouched
        for ddl in _DDL:
            await _pg_create(conn, ddl)
        await _pg_upgrade(conn)
        await pg_migrate(conn, found, "server database")
    finally:
        await conn.execute("SELECT pg_advisory_unlock(728361)")


async def _pg_upgrade(conn: Any) -> None:
    """Give old tables the columns added since (under the set-up lock), and old thread rows their values column."""
    cur = await conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name LIKE 'plait_server_%'"
    )
    present = {(str(t), str(c)) for t, c in await cur.fetchall()}
    for table, column, kind in _ADDED_COLUMNS:  # ALTER only when missing: it locks the table out
        if (table, column) not in present:
            await conn.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {kind}")
    for ddl in _AFTER_COLUMNS:
        await _pg_create(conn, ddl)
    if ("plait_server_threads", "vals") in present:
        return
    async with conn.transaction():
        await conn.execute("ALTER TABLE plait_server_threads ADD COLUMN vals TEXT")
        rows = await _PgTx(conn).fetch(_OLD_THREADS)
        for doc, vals, thread_id in _moved(rows):
            await conn.execute(_pg(_MOVE_VALUES), (doc, vals, thread_id))


class _PgTx:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def fetch(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        cur = await self.conn.execute(_pg(sql), tuple(params))
        if cur.description is None:
            return []
        names = [d.name for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in await cur.fetchall()]

    async def run(self, sql: str, params: Sequence[object] = ()) -> int:
        cur = await self.conn.execute(_pg(sql), tuple(params))
        return int(cur.rowcount)


async def open_database(target: str) -> Database:
    """The database ``target`` names: a ``postgresql://`` DSN or a SQLite file path."""
    if target.startswith(("postgres://", "postgresql://")):
        return await PostgresDatabase.open(target)
    return SqliteDatabase(target)
