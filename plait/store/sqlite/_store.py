"""``SqliteStore``: the long-term store in a SQLite file (standard library ``sqlite3``)."""

from __future__ import annotations

import importlib
import os
import sqlite3
import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typing_extensions import Self

from plait.store._rank import warn_once
from plait.store._sqlstore import MakeStep, SearchOrder, SqlStore, now
from plait.store._statement import Rows, Sql, drive
from plait.store.base import EmbeddingDimensionError, IndexConfig, TTLConfig
from plait.store.sqlite._sql import MIGRATIONS, SqliteDialect

__all__ = ["SqliteStore"]

_NO_EXTENSIONS = (
    "this Python's sqlite3 module cannot load extensions, so SqliteStore ranks vectors by an exact scan "
    "in Python (NumPy, cached in memory) instead of sqlite-vec; for sqlite-vec use a Python built with "
    "loadable SQLite extensions and pip install 'plait[vector]'"
)
_NO_VEC = (
    "sqlite-vec is not installed, so SqliteStore ranks vectors by an exact scan; pip install 'plait[vector]'"
)


def _load_vec(conn: Any) -> bool:
    """Load sqlite-vec on ``conn`` if this interpreter allows it; warn once otherwise."""
    if not hasattr(conn, "enable_load_extension"):
        warn_once("sqlite-extensions", _NO_EXTENSIONS)
        return False
    try:
        sqlite_vec = importlib.import_module("sqlite_vec")
    except ImportError:
        warn_once("sqlite-vec", _NO_VEC)
        return False
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)
    return True


def connect(conn_string: str | Path) -> sqlite3.Connection:
    """Open a database file for a store: autocommit mode (the store opens its transactions), WAL.

    Args:
        conn_string: A file path, or ``":memory:"``.

    Returns:
        The connection, usable from any thread.
    """
    if not isinstance(conn_string, (str, os.PathLike)):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"SqliteStore.from_conn_string needs a file path (str or Path), got {conn_string!r}")
    conn = sqlite3.connect(os.fspath(conn_string), check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


class SqliteStore(SqlStore):
    """Long-term store in SQLite, with optional semantic search and TTL.

    Tables (``plait_store``, ``plait_store_vectors``, ``plait_store_meta``) are
    created on first use or by :meth:`setup`. Every batch runs in one
    ``BEGIN IMMEDIATE`` transaction under the store's lock, so one store serves
    many threads, and several processes may share the file (WAL mode).

    Example:
        >>> with SqliteStore.from_conn_string("memory.db") as store:
        ...     store.put(("users", "u1"), "profile", {"name": "Ann"})

    Args:
        conn: An open ``sqlite3.Connection`` (opened with ``check_same_thread=False``
            to share it between threads).
        deserializer: Not supported (values are JSON).
        index: Semantic-search settings: ``dims``, ``embed``, ``fields``, and optionally
            ``distance_type``: ``cosine`` (the default), ``l2`` or ``inner_product`` (these two
            rank by an exact scan).
        ttl: TTL settings: ``default_ttl``, ``refresh_on_read``, ``sweep_interval_minutes``.
        search_order: The order of search results without a query: ``"updated"`` (the last
            written first, as LangGraph's SQL stores) or ``"written"`` (as ``InMemoryStore``).
    """

    MIGRATIONS: Sequence[str] = MIGRATIONS
    """The statements :meth:`setup` runs to create the tables (each idempotent)."""
    distances = ("cosine", "l2", "inner_product")

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        deserializer: Any = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search_order: SearchOrder = "updated",
    ) -> None:
        """Create the store on an open connection (see the class docstring)."""
        if deserializer is not None:
            raise NotImplementedError(
                "SqliteStore(deserializer=...): plait stores values as JSON and reads them as dicts"
            )
        if type(conn).__module__.startswith("aiosqlite"):
            raise TypeError(
                "SqliteStore and AsyncSqliteStore take a standard sqlite3.Connection (batches run in a worker "
                "thread), not an aiosqlite one; use AsyncSqliteStore.from_conn_string(path)"
            )
        if not hasattr(conn, "execute") or not hasattr(conn, "commit"):
            raise TypeError(
                f"SqliteStore needs a sqlite3.Connection, got {type(conn).__name__}; "
                "use SqliteStore.from_conn_string(path) to open one"
            )
        distance = str((index or {}).get("distance_type") or "cosine")
        vec = _load_vec(conn) if index is not None and distance == "cosine" else False
        dialect = SqliteDialect(index.get("dims") if index else None, vec=vec, distance=distance)
        super().__init__(dialect, index=index, ttl=ttl, search_order=search_order)
        self.conn = conn
        self.lock = threading.RLock()
        self.is_setup = False

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str | Path,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        search_order: SearchOrder = "updated",
    ) -> Generator[Self, None, None]:
        """Open (creating if needed) the database file in WAL mode; close it on exit.

        Args:
            conn_string: A file path, or ``":memory:"``.
            index: Semantic-search settings.
            ttl: TTL settings.
            search_order: The order of search results without a query (``"updated"`` or ``"written"``).
        """
        conn = connect(conn_string)
        try:
            store = cls(conn, index=index, ttl=ttl, search_order=search_order)
            try:
                yield store
            finally:
                store._sweeper.stop(5)
        finally:
            conn.close()

    def setup(self) -> None:
        """Create the tables (idempotent; also done on first use)."""
        self._setup()

    def _setup(self) -> None:
        with self.lock:
            if self.is_setup:
                return
            self.conn.execute("PRAGMA busy_timeout=30000")
            if self.conn.in_transaction:
                self.conn.commit()
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in self.MIGRATIONS:
                    self.conn.execute(statement)
            except BaseException:
                self.conn.rollback()
                raise
            self.conn.commit()
            if self.index_spec is not None:
                self._check_dims(self.index_spec.dims)
            self.is_setup = True

    def _check_dims(self, dims: int) -> None:
        """Record the vector length on first use; refuse a store configured with another one."""
        self.conn.execute("INSERT OR IGNORE INTO plait_store_meta (name, value) VALUES ('dims', ?)", (dims,))
        self.conn.commit()
        stored = int(
            self.conn.execute("SELECT value FROM plait_store_meta WHERE name = 'dims'").fetchone()[0]
        )
        if stored != dims:
            raise EmbeddingDimensionError(
                f"this database holds {stored}-dimension vectors but index['dims'] is {dims}; "
                "use the same embedder and dims, or another database file"
            )

    def _execute(self, sql: Sql) -> Rows:
        if sql.many:
            self.conn.executemany(sql.text, sql.params)
            return []
        return self.conn.execute(sql.text, sql.params).fetchall()

    def _execute_alone(self, sql: Sql) -> Rows:
        """One statement in its own transaction (several parameter sets: one transaction for all)."""
        if not sql.many or len(sql.params) < 2:  # noqa: PLR2004 - one run of the statement
            return self._execute(sql)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany(sql.text, sql.params)
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()
        return []

    def _transact(self, make_step: MakeStep, *, alone: bool = False) -> object:
        with self.lock:
            if not self.is_setup:
                self._setup()
            if self.conn.in_transaction:
                self.conn.commit()
            if alone:  # no write lock taken for reads; a write statement locks only while it runs
                return drive(make_step(now()), self._execute_alone)
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                result = drive(make_step(now()), self._execute)
            except BaseException:
                self.conn.rollback()
                raise
            self.conn.commit()
            return result
