"""All SQL text of :class:`plait.checkpoint.postgres.PostgresSaver` (PostgreSQL dialect)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import LiteralString

from plait.checkpoint._engine_sql import page_query
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
    "LEASE",
    "LOCK",
    "LOCK_THREAD",
    "META_TABLE",
    "MIGRATIONS",
    "PRUNE_ROWS",
    "SCHEMA_VERSION",
    "SELECT_HEAD",
    "SET_META",
    "chain_query",
    "list_query",
    "writes_query",
]

SCHEMA_VERSION = 2

LOCK = "SELECT pg_advisory_xact_lock(7046317051)"
"""Serialises concurrent setup()/migrations of several processes."""

MIGRATIONS: dict[int, list[LiteralString]] = {
    1: [
        """CREATE TABLE IF NOT EXISTS checkpoints (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT NOT NULL,
            parent_checkpoint_id TEXT,
            step INTEGER,
            source TEXT,
            created_at TEXT NOT NULL,
            checkpoint BYTEA NOT NULL,
            metadata BYTEA NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
        )""",
        """CREATE TABLE IF NOT EXISTS checkpoint_blobs (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL,
            version TEXT NOT NULL,
            prev_id TEXT,
            type TEXT NOT NULL,
            blob BYTEA NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
        )""",
        """CREATE TABLE IF NOT EXISTS checkpoint_writes (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            checkpoint_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            channel TEXT NOT NULL,
            task_path TEXT NOT NULL DEFAULT '',
            type TEXT NOT NULL DEFAULT 'msgpack',
            blob BYTEA NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
        )""",
    ],
    2: [
        """CREATE TABLE IF NOT EXISTS checkpoint_leases (
            thread_id TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL DEFAULT '',
            owner TEXT,
            expires_at TIMESTAMPTZ NOT NULL,
            waiter TEXT,
            waiter_seen TIMESTAMPTZ,
            PRIMARY KEY (thread_id, checkpoint_ns)
        )""",
    ],
}

META_TABLE = "CREATE TABLE IF NOT EXISTS checkpoint_migrations (v INTEGER PRIMARY KEY)"
"""Schema versions applied, one row each (LangGraph's table name and column)."""
GET_META = "SELECT MAX(v) FROM checkpoint_migrations"
SET_META = "INSERT INTO checkpoint_migrations (v) VALUES (%s) ON CONFLICT (v) DO NOTHING"

INSERT_CHECKPOINT = """INSERT INTO checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, step, source, created_at, checkpoint, metadata)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
      parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, step = EXCLUDED.step, source = EXCLUDED.source,
      checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata"""

INSERT_BLOB = """INSERT INTO checkpoint_blobs
    (thread_id, checkpoint_ns, channel, version, prev_id, type, blob) VALUES (%s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO UPDATE SET
      prev_id = EXCLUDED.prev_id, type = EXCLUDED.type, blob = EXCLUDED.blob"""

DELETE_TASK_WRITES = """DELETE FROM checkpoint_writes
    WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s AND task_id = %s
    AND channel NOT IN ('__interrupt__', '__resume__')"""

INSERT_WRITE = """INSERT INTO checkpoint_writes
    (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, blob)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
      channel = EXCLUDED.channel, task_path = EXCLUDED.task_path, blob = EXCLUDED.blob"""

_HEAD_COLUMNS = (
    "c.checkpoint_id, c.parent_checkpoint_id, c.step, c.source, c.created_at, c.checkpoint, c.metadata"
)

SELECT_HEAD = f"""SELECT {_HEAD_COLUMNS}, w.task_id, w.channel, w.blob
    FROM checkpoints c LEFT JOIN checkpoint_writes w
      ON w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id
    WHERE c.thread_id = %s AND c.checkpoint_ns = %s AND c.checkpoint_id = COALESCE(%s::text,
      (SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s
       ORDER BY checkpoint_id DESC LIMIT 1))
    ORDER BY w.task_id, w.idx"""

DELETE_THREAD = [
    "DELETE FROM checkpoint_writes WHERE thread_id = %s",
    "DELETE FROM checkpoint_blobs WHERE thread_id = %s",
    "DELETE FROM checkpoints WHERE thread_id = %s",
]

PRUNE_ROWS = """SELECT checkpoint_ns, checkpoint_id, created_at, checkpoint FROM checkpoints
    WHERE thread_id = %s ORDER BY checkpoint_ns, checkpoint_id DESC"""
BLOB_KEYS = "SELECT channel, version FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s"
DELETE_BLOB = """DELETE FROM checkpoint_blobs
    WHERE thread_id = %s AND checkpoint_ns = %s AND channel = %s AND version = %s"""
DELETE_CHECKPOINT = (
    "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
)
DELETE_WRITES_OF = (
    "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
)


def writes_query(thread: tuple[str, str], ids: Sequence[str]) -> tuple[str, list[Any]]:
    """Pending writes of several checkpoints of one thread."""
    sql = (
        "SELECT checkpoint_id, task_id, channel, blob FROM checkpoint_writes "
        "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = ANY(%s) "
        "ORDER BY checkpoint_id, task_id, idx"
    )
    return sql, [*thread, list(ids)]


def chain_query(thread: tuple[str, str], targets: Sequence[tuple[str, str]]) -> tuple[str, list[Any]]:
    """Blob rows of ``targets`` (``(channel, row id)`` pairs) and of every row their deltas build on."""
    # LATERAL forces one primary-key lookup per step whatever the table statistics say.
    sql = """WITH RECURSIVE chain(channel, version, prev_id, type, blob) AS (
        SELECT b.channel, b.version, b.prev_id, b.type, b.blob
        FROM unnest(%s::text[], %s::text[]) AS t(channel, version)
        CROSS JOIN LATERAL (SELECT * FROM checkpoint_blobs x
          WHERE x.thread_id = %s AND x.checkpoint_ns = %s AND x.channel = t.channel
            AND x.version = t.version LIMIT 1) b
        UNION ALL
        SELECT b.channel, b.version, b.prev_id, b.type, b.blob
        FROM chain CROSS JOIN LATERAL (SELECT * FROM checkpoint_blobs x
          WHERE x.thread_id = %s AND x.checkpoint_ns = %s AND x.channel = chain.channel
            AND x.version = chain.prev_id LIMIT 1) b
        WHERE chain.type = 'delta'
    ) SELECT channel, version, prev_id, type, blob FROM chain"""
    return sql, [[c for c, _ in targets], [r for _, r in targets], *thread, *thread]


HEAD_ID = """SELECT MAX(checkpoint_id) FROM (SELECT checkpoint_id FROM checkpoints
    WHERE thread_id = %s AND checkpoint_ns = %s ORDER BY checkpoint_id DESC LIMIT 1) AS head"""
LOCK_THREAD: str | None = "SELECT pg_advisory_xact_lock(hashtext(%s))"
"""Taken before checking the thread head, so two writers cannot both pass the check."""
HEAD_AND_PARENT = f"""SELECT ({HEAD_ID}), EXISTS(SELECT 1 FROM checkpoints
    WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s)"""
"""The thread head and whether the parent a put builds on still exists (read inside the put's transaction)."""
NAMESPACES = "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_ns"

LEASE = lease_sql("postgres")
"""Statements on ``checkpoint_leases`` (the cross-process thread lease)."""

THREADS = """SELECT c.thread_id, t.n, c.checkpoint_id, c.step, c.created_at FROM checkpoints c
JOIN (SELECT thread_id, COUNT(*) AS n, MAX(checkpoint_id) AS head FROM checkpoints
      WHERE checkpoint_ns = '' GROUP BY thread_id) t
  ON c.thread_id = t.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id = t.head
ORDER BY c.created_at DESC"""


def list_query(
    thread: tuple[str, str] | None, after: tuple[str, str, str] | None, where: dict[str, Any], limit: int
) -> tuple[str, list[Any]]:
    """One page of checkpoint rows, newest first (see :func:`plait.checkpoint._engine_sql.page_query`)."""
    return page_query("%s", _HEAD_COLUMNS, thread, after, where, limit)
