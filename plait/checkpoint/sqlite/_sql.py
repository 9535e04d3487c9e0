"""All SQL text of :class:`plait.checkpoint.sqlite.SqliteSaver` (SQLite dialect)."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from plait.checkpoint._engine_ops import Ops, Session, Step
from plait.checkpoint._engine_sql import PutRows, WriteRow, page_query, put_allowed
from plait.checkpoint._lease import lease_sql

__all__ = [
    "BLOB_KEYS",
    "DELETE_BLOB",
    "DELETE_CHECKPOINT",
    "DELETE_TASK_WRITES",
    "DELETE_THREAD",
    "DELETE_WRITES_OF",
    "GET_META",
    "INSERT_BLOB",
    "INSERT_CHECKPOINT",
    "HEAD_AND_PARENT",
    "HEAD_ID",
    "NAMESPACES",
    "THREADS",
    "INSERT_WRITE",
    "LEGACY_TABLES",
    "REWRITE_BLOB",
    "ROW_EXISTS",
    "LEASE",
    "LOCK_THREAD",
    "META_TABLE",
    "MIGRATIONS",
    "PRUNE_ROWS",
    "SCHEMA_VERSION",
    "SCHEMA_NAMES",
    "SELECT_HEAD",
    "SET_META",
    "WRITES_VIEW",
    "chain_query",
    "legacy_steps",
    "put_ops",
    "list_query",
    "writes_query",
    "writes_steps",
]

SCHEMA_VERSION = 3

MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE IF NOT EXISTS checkpoints (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT NOT NULL,
            parent_checkpoint_id TEXT,
            step INTEGER,
            source TEXT,
            created_at TEXT NOT NULL,
            checkpoint BLOB NOT NULL,
            metadata BLOB NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
        ) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS plait_checkpoint_blobs (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            prev_id TEXT,
            kind TEXT NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, channel, checkpoint_id)
        ) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS checkpoint_writes (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            channel TEXT NOT NULL,
            task_path TEXT NOT NULL DEFAULT '',
            value BLOB NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
        ) WITHOUT ROWID""",
    ],
    2: [
        """CREATE TABLE IF NOT EXISTS plait_checkpoint_leases (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            owner TEXT,
            expires_at REAL NOT NULL,
            waiter TEXT,
            waiter_seen REAL,
            PRIMARY KEY (thread_id, checkpoint_ns)
        ) WITHOUT ROWID""",
    ],
}

MIGRATIONS[3] = []  # version 3: plait's own tables carry plait_ names (see LEGACY_TABLES)

LEGACY_TABLES = ("checkpoint_blobs", "checkpoint_leases")
"""plait's own tables of schemas 1-2. ``checkpoints`` and ``checkpoint_writes``
keep the names seed 002 documents and queries (its SQL reads and prunes them directly)."""


def legacy_steps(present: set[str]) -> list[Step]:
    """Move plait's own tables of schema 1-2 to their ``plait_`` names."""
    steps = [Step(f"ALTER TABLE {t} RENAME TO plait_{t}", []) for t in LEGACY_TABLES if t in present]
    return [Step("DROP VIEW IF EXISTS writes", []), *steps]


SCHEMA_NAMES = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"

WRITES_VIEW = """CREATE VIEW IF NOT EXISTS writes AS SELECT thread_id, checkpoint_ns, checkpoint_id, task_id,
    task_path, idx, channel, 'msgpack' AS type, value FROM checkpoint_writes"""
"""LangGraph's SQLite saver names its pending-writes table ``writes``: SQL written for its layout (reports,
size probes) reads plait's through this view. Not a schema change: set up whatever the version."""

META_TABLE = "CREATE TABLE IF NOT EXISTS plait_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
GET_META = "SELECT value FROM plait_meta WHERE key = ?"
SET_META = "INSERT OR REPLACE INTO plait_meta (key, value) VALUES (?, ?)"

INSERT_CHECKPOINT = """INSERT OR REPLACE INTO checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, step, source, created_at, checkpoint, metadata)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"""

INSERT_BLOB = """INSERT OR REPLACE INTO plait_checkpoint_blobs
    (thread_id, checkpoint_ns, channel, checkpoint_id, prev_id, kind, value) VALUES (?, ?, ?, ?, ?, ?, ?)"""

DELETE_TASK_WRITES = """DELETE FROM checkpoint_writes
    WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ?
    AND channel NOT IN ('__interrupt__', '__resume__')"""

INSERT_WRITE = """INSERT OR REPLACE INTO checkpoint_writes
    (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, value)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""

_HEAD_COLUMNS = (
    "c.checkpoint_id, c.parent_checkpoint_id, c.step, c.source, c.created_at, c.checkpoint, c.metadata"
)

SELECT_HEAD = f"""SELECT {_HEAD_COLUMNS}, w.task_id, w.channel, w.value
    FROM checkpoints c LEFT JOIN checkpoint_writes w
      ON w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id
    WHERE c.thread_id = ? AND c.checkpoint_ns = ? AND c.checkpoint_id = COALESCE(?,
      (SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?))
    ORDER BY w.task_id, w.idx"""

DELETE_THREAD = [
    "DELETE FROM checkpoint_writes WHERE thread_id = ?",
    "DELETE FROM plait_checkpoint_blobs WHERE thread_id = ?",
    "DELETE FROM checkpoints WHERE thread_id = ?",
]


def writes_query(thread: tuple[str, str], ids: Sequence[str]) -> tuple[str, list[Any]]:
    """Pending writes of several checkpoints of one thread."""
    marks = ", ".join("?" for _ in ids)
    sql = (
        "SELECT checkpoint_id, task_id, channel, value FROM checkpoint_writes "
        f"WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({marks}) "
        "ORDER BY checkpoint_id, task_id, idx"
    )
    return sql, [*thread, *ids]


def chain_query(thread: tuple[str, str], targets: Sequence[tuple[str, str]]) -> tuple[str, list[Any]]:
    """Blob rows of ``targets`` (``(channel, row id)`` pairs) and of every row their deltas build on."""
    # the targets as a VALUES table joined on the primary key: one lookup each (an OR of pairs made
    # SQLite scan every row of the thread, once per query: 7 ms for a page of history at 1000 turns)
    values = ", ".join("(?, ?)" for _ in targets)
    sql = f"""WITH RECURSIVE wanted(channel, checkpoint_id) AS (VALUES {values}),
    chain(channel, checkpoint_id, prev_id, kind, value) AS (
        SELECT b.channel, b.checkpoint_id, b.prev_id, b.kind, b.value FROM wanted
        JOIN plait_checkpoint_blobs b ON b.thread_id = ? AND b.checkpoint_ns = ?
          AND b.channel = wanted.channel AND b.checkpoint_id = wanted.checkpoint_id
        UNION
        SELECT b.channel, b.checkpoint_id, b.prev_id, b.kind, b.value
        FROM chain JOIN plait_checkpoint_blobs b ON b.thread_id = ? AND b.checkpoint_ns = ?
          AND b.channel = chain.channel AND b.checkpoint_id = chain.prev_id
        WHERE chain.kind = 'delta'
    ) SELECT channel, checkpoint_id, prev_id, kind, value FROM chain"""
    params: list[Any] = [value for pair in targets for value in pair]
    return sql, [*params, *thread, *thread]


PRUNE_ROWS = """SELECT checkpoint_ns, checkpoint_id, created_at, checkpoint FROM checkpoints
    WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id DESC"""
BLOB_KEYS = (
    "SELECT channel, checkpoint_id FROM plait_checkpoint_blobs WHERE thread_id = ? AND checkpoint_ns = ?"
)
DELETE_BLOB = """DELETE FROM plait_checkpoint_blobs
    WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND checkpoint_id = ?"""
DELETE_CHECKPOINT = "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
DELETE_WRITES_OF = (
    "DELETE FROM checkpoint_writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)

HEAD_ID = "SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?"
LOCK_THREAD: str | None = None
"""Taken before checking the thread head, so two writers cannot both pass the check."""
HEAD_AND_PARENT = f"""SELECT ({HEAD_ID}), EXISTS(SELECT 1 FROM checkpoints
    WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?)"""
"""The thread head and whether the parent a put builds on still exists (read inside the put's transaction)."""
NAMESPACES = "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_ns"

LEASE = lease_sql("sqlite")
"""Statements on ``plait_checkpoint_leases`` (the cross-process thread lease)."""

THREADS = """SELECT c.thread_id, t.n, c.checkpoint_id, c.step, c.created_at FROM checkpoints c
JOIN (SELECT thread_id, COUNT(*) AS n, MAX(checkpoint_id) AS head FROM checkpoints
      WHERE checkpoint_ns = '' GROUP BY thread_id) t
  ON c.thread_id = t.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id = t.head
ORDER BY c.created_at DESC"""


def list_query(
    thread: tuple[str, str | None] | None,
    after: tuple[str, str, str] | None,
    where: dict[str, Any],
    limit: int,
) -> tuple[str, list[Any]]:
    """One page of checkpoint rows, newest first (see :func:`plait.checkpoint._engine_sql.page_query`)."""
    return page_query("?", _HEAD_COLUMNS, thread, after, where, limit, table="checkpoints")


ROW_EXISTS = """SELECT 1 FROM plait_checkpoint_blobs
    WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND checkpoint_id = ?"""
REWRITE_BLOB = """UPDATE plait_checkpoint_blobs SET prev_id = ?, kind = ?, value = ?
    WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND checkpoint_id = ?"""


def writes_steps(
    thread: tuple[str, str], cid: str | None, task_id: str, rows: Sequence[WriteRow]
) -> tuple[Step, ...]:
    """A task's writes: those it wrote before go (an interrupt or a resume stays), these are stored."""
    return (
        Step(DELETE_TASK_WRITES, [*thread, cid, task_id]),
        Step(INSERT_WRITE, [(*thread, cid, task_id, *row) for row in rows], True),
    )


def put_ops(rows: PutRows) -> Ops[tuple[str | None, bool]]:
    """The put as one ``BEGIN IMMEDIATE`` transaction; answers ``(head, parent exists)``."""
    answer: tuple[str | None, bool] = yield Session(_put_body(rows))
    return answer


def _put_body(rows: PutRows) -> Generator[Step, Any, tuple[str | None, bool]]:
    t, ns = rows.thread
    head, there = (yield Step(HEAD_AND_PARENT, [t, ns, t, ns, rows.parent]))[0]
    for channel, prev in {(b[0], b[2]) for b in rows.blobs if b[2] is not None}:
        # every row the new deltas build on must still exist (a prune may have removed an older base)
        there = there and bool((yield Step(ROW_EXISTS, [t, ns, channel, prev])))
    if put_allowed(rows, head, bool(there)):
        if rows.blobs:
            yield Step(INSERT_BLOB, [(t, ns, *b) for b in rows.blobs], True)
        if rows.rewrites:
            yield Step(REWRITE_BLOB, [(p, k, d, t, ns, c, r) for c, r, p, k, d in rows.rewrites], True)
        yield Step(INSERT_CHECKPOINT, rows.checkpoint)
    return head, bool(there)
