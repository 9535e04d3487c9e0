"""What a thread's checkpoints take in the checkpoint saver's tables (``GET /threads/{thread_id}/storage``).

On PostgreSQL the saver's tables are in the server's database; on SQLite in the saver's own file,
read through its connection (under its lock, off the event loop).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

from plait.server._db import Database

__all__ = ["Usage", "postgres_usage", "sqlite_usage"]

Usage = tuple[tuple[int, int], list[tuple[str, int, int]], tuple[int, int]]
"""``(count, bytes)`` of the checkpoints (with their metadata), ``(channel, versions, bytes)`` of
each channel's stored values, ``(count, bytes)`` of the pending writes."""

_TABLES = {
    # dialect: (checkpoints, channel values, pending writes, value column of the last two, byte length)
    "sqlite": ("checkpoints", "plait_checkpoint_blobs", "checkpoint_writes", "value", "LENGTH"),
    "postgres": (
        "plait_checkpoints",
        "plait_checkpoint_blobs",
        "plait_checkpoint_writes",
        "blob",
        "octet_length",
    ),
}


def _queries(dialect: str) -> tuple[str, str, str]:
    checkpoints, blobs, writes, value, length = _TABLES[dialect]
    return (
        f"SELECT COUNT(*) AS n, COALESCE(SUM({length}(checkpoint) + {length}(metadata)), 0) AS b "
        f"FROM {checkpoints} WHERE thread_id = ?",
        f"SELECT channel, COUNT(*) AS n, COALESCE(SUM({length}({value})), 0) AS b FROM {blobs} "
        "WHERE thread_id = ? GROUP BY channel ORDER BY channel",
        f"SELECT COUNT(*) AS n, COALESCE(SUM({length}({value})), 0) AS b FROM {writes} WHERE thread_id = ?",
    )


def _usage(found: list[list[tuple[Any, ...]]]) -> Usage:
    (checkpoints,), channels, (writes,) = found
    return (
        (int(checkpoints[0]), int(checkpoints[1])),
        [(str(name), int(n), int(b)) for name, n, b in channels],
        (int(writes[0]), int(writes[1])),
    )


async def postgres_usage(db: Database, thread_id: str) -> Usage:
    """The thread's :data:`Usage` in PostgreSQL's checkpoint tables."""
    found = [await db.fetch(sql, (thread_id,)) for sql in _queries("postgres")]
    return _usage([[tuple(row.values()) for row in rows] for rows in found])


def sqlite_usage(conn: sqlite3.Connection, lock: threading.RLock, thread_id: str) -> Usage:
    """The thread's :data:`Usage` in a SQLite saver's file (blocking: call it off the event loop)."""
    with lock:
        return _usage([conn.execute(sql, (thread_id,)).fetchall() for sql in _queries("sqlite")])
