"""SQLite backend: :class:`SqliteSaver` (standard library ``sqlite3`` only)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from typing_extensions import Self

from plait.checkpoint._calls import SaveOp
from plait.checkpoint._engine import SqlSaverBase
from plait.checkpoint._engine_batch import Held, own_methods
from plait.checkpoint._engine_ops import Batch, Fetch, Op, Ops, Setup, Step, run_session
from plait.checkpoint._lease import DEFAULT_TTL
from plait.checkpoint.serde import Serializer
from plait.checkpoint.sqlite import _sql
from plait.errors import IncompatibleDatabaseError, SchemaVersionError

__all__ = ["SqliteSaver", "migrate_body", "step"]

_T = TypeVar("_T")


def step(cur: Any, item: Step) -> Any:
    """Run one statement on a sqlite3 connection or cursor; its rows, or its row count when it returns none."""
    if item.many:
        return cur.executemany(item.sql, item.params).rowcount
    found = cur.execute(item.sql, item.params)
    return found.fetchall() if found.description is not None else found.rowcount


def migrate_body() -> Generator[Step, Any, None]:
    """Create or migrate plait's tables (inside the caller's write transaction)."""
    names = {r[0] for r in (yield Step(_sql.SCHEMA_NAMES, []))}
    yield Step(_sql.META_TABLE, [])
    row = yield Step(_sql.GET_META, ["schema_version"])
    version = int(row[0][0]) if row else 0
    if version == 0 and "checkpoints" in names:  # a table plait did not write: LangGraph's SqliteSaver
        raise IncompatibleDatabaseError(
            "This SQLite file holds another library's `checkpoints` table (LangGraph's SqliteSaver); plait "
            "keeps seed 002's table names, so the two cannot share a file. Nothing was changed: import its "
            "threads with `plait migrate --from-langgraph FILE --to NEW_FILE`, or give plait another file."
        )
    if version > _sql.SCHEMA_VERSION:
        raise SchemaVersionError(version, _sql.SCHEMA_VERSION)
    if 0 < version < 3:
        for item in _sql.legacy_steps(names):  # noqa: UP028 - a list iterator cannot take the answers sent
            yield item
    for target in range(version + 1, _sql.SCHEMA_VERSION + 1):
        for statement in _sql.MIGRATIONS[target]:
            yield Step(statement, [])
    yield Step(_sql.WRITES_VIEW, [])
    yield Step(_sql.SET_META, ["schema_version", str(_sql.SCHEMA_VERSION)])


class SqliteSaver(SqlSaverBase):
    """Checkpoints in a SQLite database, with delta-encoded lists (see ``docs/storage.md``).

    Tables are created on first use, and the database is switched to WAL mode
    (``synchronous=NORMAL``), as LangGraph's saver does. The connection is guarded by a lock, so
    one saver may serve several threads (open it with ``check_same_thread=False``).
    Runs on one thread never interleave, even from several processes sharing the
    file: each run holds a lease row in ``plait_checkpoint_leases`` (see :meth:`lease`). The tables
    ``checkpoints`` (with ``created_at``) and ``checkpoint_writes`` keep seed 002's names; a file written
    by LangGraph's SqliteSaver is refused (``plait migrate --from-langgraph`` imports it).

    Args:
        conn: An open ``sqlite3.Connection``.
        serde: The serializer (register your own classes on it).
        cache_size: How many materialized values to keep in memory.
        lease_ttl: Seconds after which the thread lease of a killed process can be taken over.
        inline_async: Run the statements of the async methods (``aget_tuple``, ``aput`` …) on the
            calling event loop rather than in a worker thread. No thread hop per call (a quarter of
            ``plait serve``'s CPU per run), but the loop waits for each statement, and for the file's
            write lock while another process holds it (up to the connection's busy timeout). While
            another thread of this process uses the connection, calls still go to a worker thread.
    """

    sql = _sql

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        serde: Serializer | None = None,
        cache_size: int = 128,
        lease_ttl: float = DEFAULT_TTL,
        inline_async: bool = False,
    ) -> None:
        if not isinstance(conn, sqlite3.Connection):  # pyright: ignore[reportUnnecessaryIsInstance]  # runtime guard: callers may pass anything
            raise TypeError(
                f"SqliteSaver needs a sqlite3.Connection, got {type(conn).__name__}; "
                "use SqliteSaver.from_conn_string(path) to open one"
            )
        self.conn = conn
        self.lock = threading.RLock()
        self.is_setup = False
        self.inline_async = inline_async
        self._joined = False
        super().__init__(serde=serde, cache_size=cache_size, lease_ttl=lease_ttl)

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

    async def _off_loop(self, fn: Callable[..., _T], *args: object) -> _T:
        if self.inline_async and self.lock.acquire(blocking=False):  # not busy in another thread
            try:
                return fn(*args)
            finally:
                self.lock.release()
        return await super()._off_loop(fn, *args)

    def _perform(self, op: Op) -> object:
        with self.lock:
            conn = self.conn
            if isinstance(op, Setup):
                return self._create_tables(op.write)
            if isinstance(op, Fetch):
                return conn.execute(op.sql, op.params).fetchall()
            with self._tx() as cur:
                if isinstance(op, Batch):
                    return [step(cur, item) for item in op.steps]
                return run_session(op.body, lambda item: step(cur, item))

    def _create_tables(self, write: bool) -> bool:
        with self.lock:
            conn = self.conn
            names = {r[0] for r in conn.execute(_sql.SCHEMA_NAMES)}
            if "plait_meta" not in names and not write:
                return False  # a read of a database without plait's tables creates nothing
            if (
                "plait_meta" not in names
                and not conn.in_transaction
                and conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2
            ):
                # incremental vacuum lets prune shrink the file in short steps; on a file that
                # already has a header (WAL switched on), the mode takes effect through a VACUUM,
                # instant while there are no tables
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                with contextlib.suppress(sqlite3.OperationalError):  # busy: another process is setting up
                    conn.execute("VACUUM")
            if not conn.in_transaction:
                _use_wal(conn)
            with self._tx() as cur:
                run_session(migrate_body(), lambda item: step(cur, item))
            self.is_setup = True
            return True

    def _scope_ops(self) -> Ops[tuple[str, bool]]:
        """The database file (other processes can open it), or this saver for in-memory databases."""
        rows = yield Fetch("PRAGMA database_list", [])
        path = next((r[2] for r in rows if r[1] == "main"), "")
        if not path:
            return f"sqlite-memory:{id(self)}", False
        return f"sqlite:{os.path.realpath(path)}", True

    def _save_many(
        self, calls: Sequence[SaveOp], release: tuple[str, str] | None, before: Held | None = None
    ) -> bool:
        """The calls and the lease's release in one transaction (one commit, where each call made its own).

        When one fails, the transaction is rolled back and the calls are made one by one, so the
        calls before the failing one are stored, as :meth:`put` one after another would. A
        failed commit is rolled back and raised (it may have been made in part: no replay).
        (SQLite holds no calls back: ``before`` is always ``None``, see :meth:`_hold_saves`.)
        """
        if not own_methods(type(self), ("put", "put_writes")):
            return False
        with self.lock:
            if self._joined or self.conn.in_transaction or before is not None:
                return super()._save_many(calls, release, before)
            self._drive(self._ready(write=True))  # tables first: a rollback below must not undo them
            tail, holder = self._leases.release_steps(release) if release is not None else ((), None)
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self._joined_calls(calls, tail)
            except BaseException as exc:
                self.conn.rollback()
                self._forget(calls)
                if not isinstance(exc, Exception):
                    raise
                return super()._save_many(calls, release)
            try:
                self.conn.commit()
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.rollback()
                self._forget(calls)
                raise
        if holder is not None:
            self._leases.released(holder)
        return True

    def _joined_calls(self, calls: Sequence[SaveOp], tail: Sequence[Step]) -> None:
        """Make ``calls``, then the ``tail`` statements, in the open transaction (:meth:`_tx` joins it)."""
        self._joined = True
        try:
            for call in calls:
                self._drive(self._call_ops(call))
            for item in tail:
                step(self.conn, item)
        finally:
            self._joined = False

    @contextmanager
    def _tx(self) -> Generator[sqlite3.Connection, None, None]:
        with self.lock:
            conn = self.conn
            if self._joined:  # inside _save_many's transaction, which commits or rolls back
                yield conn
                return
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
