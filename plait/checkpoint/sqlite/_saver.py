"""SQLite backend: :class:`SqliteSaver` (standard library ``sqlite3`` only)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typing_extensions import Self

from plait.checkpoint._engine import SqlSaverBase
from plait.checkpoint._lease import DEFAULT_TTL
from plait.checkpoint.serde import Serializer
from plait.checkpoint.sqlite import _sql
from plait.errors import IncompatibleDatabaseError, SchemaVersionError

__all__ = ["SqliteSaver"]


class SqliteSaver(SqlSaverBase):
    """Checkpoints in a SQLite database, with delta-encoded lists (see ``docs/storage.md``).

    Tables are created on first use, and the database is switched to WAL mode
    (``synchronous=NORMAL``), as LangGraph's saver does. The connection is guarded by a lock, so
    one saver may serve several threads (open it with ``check_same_thread=False``).
    Runs on one thread never interleave, even from several processes sharing the
    file: each run holds a lease row in ``checkpoint_leases`` (see :meth:`lease`).

    Args:
        conn: An open ``sqlite3.Connection``.
        serde: The serializer (register your own classes on it).
        cache_size: How many materialized values to keep in memory.
        lease_ttl: Seconds after which the thread lease of a killed process can be taken over.
    """

    sql = _sql

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        serde: Serializer | None = None,
        cache_size: int = 128,
        lease_ttl: float = DEFAULT_TTL,
    ) -> None:
        super().__init__(serde=serde, cache_size=cache_size, lease_ttl=lease_ttl)
        if not isinstance(conn, sqlite3.Connection):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
            raise TypeError(
                f"SqliteSaver needs a sqlite3.Connection, got {type(conn).__name__}; "
                "use SqliteSaver.from_conn_string(path) to open one"
            )
        self.conn = conn
        self.lock = threading.RLock()
        self.is_setup = False

    @classmethod
    @contextmanager
    def from_conn_string(cls, path: str | Path, **kwargs: Any) -> Generator[Self, None, None]:
        """Open (creating if needed) the database file at ``path`` in WAL mode; close it on exit.

        Args:
            path: A file path, or ``":memory:"``.
            **kwargs: Passed to :class:`SqliteSaver`.
        """
        if not isinstance(path, (str, os.PathLike)):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
            raise TypeError(f"SqliteSaver.from_conn_string needs a file path (str or Path), got {path!r}")
        conn = sqlite3.connect(os.fspath(path), check_same_thread=False)
        try:
            _use_wal(conn)
            yield cls(conn, **kwargs)
        finally:
            conn.close()

    def setup(self) -> None:
        """Create or migrate the tables (done automatically on first use; idempotent)."""
        self._create_tables()

    def _create_tables(self) -> None:
        with self.lock:
            conn = self.conn
            names = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
            }
            if "checkpoints" in names and "plait_meta" not in names:
                raise IncompatibleDatabaseError(
                    "This SQLite database already has a 'checkpoints' table that plait did not create (LangGraph's "
                    "SqliteSaver layout?). plait keeps its own layout (docs/storage.md); use a new file. "
                    "Nothing was changed."
                )
            fresh = not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkpoints'").fetchone()
            if fresh and not conn.in_transaction and conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
                # incremental vacuum lets prune shrink the file in short steps; on a file that
                # already has a header (WAL switched on), the mode takes effect through a VACUUM,
                # instant while there are no tables
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                with contextlib.suppress(sqlite3.OperationalError):  # busy: another process is setting up
                    conn.execute("VACUUM")
            if not conn.in_transaction:
                # WAL (kept in the file) lets readers work during writes; with it, NORMAL sync
                # survives a killed process (only an OS crash can lose the last commits).
                _use_wal(conn)
            with self._tx() as cur:
                cur.execute(_sql.META_TABLE)
                row = cur.execute(_sql.GET_META, ["schema_version"]).fetchone()
                version = int(row[0]) if row else 0
                if version > _sql.SCHEMA_VERSION:
                    raise SchemaVersionError(version, _sql.SCHEMA_VERSION)
                for target in range(version + 1, _sql.SCHEMA_VERSION + 1):
                    for statement in _sql.MIGRATIONS[target]:
                        cur.execute(statement)
                cur.execute(_sql.SET_META, ["schema_version", str(_sql.SCHEMA_VERSION)])
            self.is_setup = True

    def _setup_once(self) -> None:
        if not self.is_setup:
            self._create_tables()

    def _lease_scope(self) -> tuple[str, bool]:
        """The database file (other processes can open it), or this saver for in-memory databases."""
        with self.lock:
            rows = self.conn.execute("PRAGMA database_list").fetchall()
        path = next((r[2] for r in rows if r[1] == "main"), "")
        if not path:
            return f"sqlite-memory:{id(self)}", False
        return f"sqlite:{os.path.realpath(path)}", True

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.conn.execute(sql, list(params)).fetchall()

    @contextmanager
    def _tx(self) -> Generator[sqlite3.Connection, None, None]:
        with self.lock:
            conn = self.conn
            if not conn.in_transaction:
                conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def _reclaim(self) -> None:
        """Give freed pages back to the file system a few at a time.

        Each step is a short write of its own, so the lease heartbeat and the
        writers of other threads and processes never wait behind a long
        ``VACUUM``. Files created before plait enabled incremental vacuum keep
        their free pages for later writes; ``vacuum()`` compacts them.
        """
        with self.lock:
            if self.conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
                return
        for _ in range(_MAX_VACUUM_STEPS):
            with self.lock:
                if self.conn.in_transaction or not self.conn.execute("PRAGMA freelist_count").fetchone()[0]:
                    break
                self.conn.execute(f"PRAGMA incremental_vacuum({_VACUUM_PAGES})").fetchall()
        with self.lock:
            if not self.conn.in_transaction:
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def vacuum(self) -> None:
        """Rebuild the file without its free pages (``VACUUM``): maintenance, run when the database is idle.

        Holds the database for as long as the copy takes; other writers wait
        (up to the connection's busy timeout). Turns on incremental vacuum for
        files created without it, so later prunes shrink the file by themselves.
        """
        with self.lock:
            self.conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


_VACUUM_PAGES = 256
_MAX_VACUUM_STEPS = 100_000


def _use_wal(conn: sqlite3.Connection) -> None:
    """WAL mode with ``synchronous=NORMAL`` and a small, truncated WAL.

    WAL lets readers work during writes; with it, NORMAL sync survives a killed
    process (only an OS crash can lose the last commits). Folding the WAL back
    often keeps the files on disk close to the data (a long thread otherwise
    carries a 4 MB WAL). Switching the mode needs a moment without other
    writers, so a busy database is retried briefly.
    """
    for attempt in range(50):
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 49:
                raise
            time.sleep(0.02)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA wal_autocheckpoint=32")
    conn.execute("PRAGMA journal_size_limit=0")
