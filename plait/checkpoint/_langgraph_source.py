"""Reading LangGraph's checkpoint tables (SQLite and PostgreSQL) as raw rows, for the importer.

Only ``SELECT`` statements on LangGraph's own tables (``checkpoints``, ``writes`` /
``checkpoint_writes``, ``checkpoint_blobs``); values stay as LangGraph's
``(type, bytes)`` pairs until the importer decodes them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["PostgresSource", "Row", "Source", "SqliteSource", "Write"]

Write = tuple[str, str, str, str, "bytes | None"]
"""``(task id, task path, channel, type, data)``."""


@dataclass
class Row:
    """One LangGraph checkpoint, undecoded."""

    thread_id: str
    ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint: dict[str, Any] | tuple[str, bytes]
    """PostgreSQL: the JSON record (values in ``blobs``); SQLite: ``(type, bytes)`` of the whole checkpoint."""
    metadata: Any
    """A dict (PostgreSQL), or the stored bytes (SQLite)."""
    blobs: dict[str, tuple[str, bytes | None]] = field(default_factory=dict[str, tuple[str, "bytes | None"]])
    """PostgreSQL: channel -> ``(type, bytes)`` of the versions the checkpoint names."""
    writes: list[Write] = field(default_factory=list[Write])


class Source(Protocol):
    """LangGraph's tables in one database."""

    def thread_ids(self) -> list[str]:
        """Every thread id, in order."""
        ...

    def rows(self, thread_id: str) -> Iterator[Row]:
        """The thread's checkpoints: parent namespaces first, oldest first within one."""
        ...


def _order(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r.ns.count("|") + (1 if r.ns else 0), r.ns, r.checkpoint_id))


class SqliteSource:
    """``langgraph-checkpoint-sqlite``'s tables ``checkpoints`` and ``writes``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def thread_ids(self) -> list[str]:
        return [
            r[0] for r in self.conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")
        ]

    def rows(self, thread_id: str) -> Iterator[Row]:
        writes: dict[tuple[str, str], list[Write]] = {}
        for ns, cid, task, path, channel, kind, value in self.conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, channel, type, value FROM writes "
            "WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id, task_id, idx",
            [thread_id],
        ):
            writes.setdefault((ns, cid), []).append((task, path or "", channel, kind or "null", value))
        rows = [
            Row(
                thread_id,
                ns,
                cid,
                parent,
                (kind or "msgpack", bytes(data)),
                meta,
                {},
                writes.get((ns, cid), []),
            )
            for ns, cid, parent, kind, data, meta in self.conn.execute(
                "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata "
                "FROM checkpoints WHERE thread_id = ?",
                [thread_id],
            )
        ]
        yield from _order(rows)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


class PostgresSource:
    """``langgraph-checkpoint-postgres``'s tables ``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``.

    Args:
        conn: A ``psycopg.Connection`` (autocommit; only reads are run).
    """

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def thread_ids(self) -> list[str]:
        return [
            r[0] for r in self.conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")
        ]

    def rows(self, thread_id: str) -> Iterator[Row]:
        blobs: dict[tuple[str, str, str], tuple[str, bytes | None]] = {
            (ns, channel, version): (kind, None if data is None else bytes(data))
            for ns, channel, version, kind, data in self.conn.execute(
                "SELECT checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs WHERE thread_id = %s",
                [thread_id],
            )
        }
        writes: dict[tuple[str, str], list[Write]] = {}
        for ns, cid, task, path, channel, kind, value in self.conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, channel, type, blob FROM checkpoint_writes "
            "WHERE thread_id = %s ORDER BY checkpoint_ns, checkpoint_id, task_id, idx",
            [thread_id],
        ):
            value = None if value is None else bytes(value)
            writes.setdefault((ns, cid), []).append((task, path or "", channel, kind or "null", value))
        rows: list[Row] = []
        for ns, cid, parent, record, meta in self.conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata "
            "FROM checkpoints WHERE thread_id = %s",
            [thread_id],
        ):
            versions: dict[str, Any] = record.get("channel_versions") or {}
            mine = {ch: blobs[(ns, ch, str(v))] for ch, v in versions.items() if (ns, ch, str(v)) in blobs}
            rows.append(Row(thread_id, ns, cid, parent, record, meta or {}, mine, writes.get((ns, cid), [])))
        yield from _order(rows)
