"""SQL text the SQLite and PostgreSQL dialects share (they differ only in placeholders)."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["BlobRow", "PutRows", "WriteRow", "page_query", "put_allowed"]


BlobRow = tuple[str, str, "str | None", str, bytes]
"""A value row to write: ``(channel, row id, prev id, kind, data)``."""

WriteRow = tuple[int, str, str, bytes]
"""A task's write to store: ``(idx, channel, task_path, data)``."""


class PutRows(NamedTuple):
    """Everything one ``put`` writes, and the conditions it is written under."""

    thread: tuple[str, str]
    cid: str
    parent: str | None
    need_parent: bool
    """The new rows build on the parent's value rows: write only while the parent exists."""
    expected: Any
    """The head the writer expects (``...``: no head check)."""
    lock: str
    """The name of the thread's advisory lock (PostgreSQL)."""
    blobs: list[BlobRow]
    """Value rows to insert."""
    rewrites: list[BlobRow]
    """Existing value rows to rewrite (same value, consolidated into a new row; see ``_keyframe``)."""
    checkpoint: list[Any]
    durable: bool


def put_allowed(rows: PutRows, head: str | None, parent_there: bool) -> bool:
    """Whether the put may be written, given the thread head and whether the parent still exists.

    The same rule is written in SQL (PostgreSQL's one-statement put); a put that fails it writes nothing.
    """
    if rows.need_parent and not parent_there:
        return False
    if rows.expected is ...:
        return True
    return head == rows.expected and (head is None or rows.cid > head)


def page_query(  # noqa: PLR0913 - one SQL builder
    mark: str,
    columns: str,
    thread: tuple[str, str | None] | None,
    after: tuple[str, str, str] | None,
    where: dict[str, Any],
    limit: int,
    *,
    table: str = "plait_checkpoints",
) -> tuple[str, list[object]]:
    """One page of checkpoint rows, newest first (from ``table``).

    Args:
        mark: The dialect's parameter placeholder (``?`` or ``%s``).
        columns: The checkpoint columns to select, ``c.``-prefixed.
        thread: ``(thread_id, checkpoint_ns)``, ``(thread_id, None)`` for every namespace of the
            thread, or ``None`` for every thread.
        after: Keyset cursor ``(checkpoint_id, thread_id, checkpoint_ns)``: rows strictly older.
        where: Extra column equalities (``step``, ``source``) and ``before`` (an id bound).
        limit: Page size.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if thread is not None and thread[1] is None:
        clauses.append(f"thread_id = {mark}")
        params.append(thread[0])
    elif thread is not None:
        clauses.append(f"thread_id = {mark} AND checkpoint_ns = {mark}")
        params.extend(thread)
    if after is not None:
        clauses.append(f"(checkpoint_id, thread_id, checkpoint_ns) < ({mark}, {mark}, {mark})")
        params.extend(after)
    for column in ("step", "source"):
        if column in where:
            clauses.append(f"{column} = {mark}")
            params.append(where[column])
    if where.get("before") is not None:
        clauses.append(f"checkpoint_id < {mark}")
        params.append(where["before"])
    sql = (
        "SELECT thread_id, checkpoint_ns, "
        + columns.replace("c.", "")
        + f" FROM {table}"
        + (" WHERE " + " AND ".join(clauses) if clauses else "")
        + f" ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT {mark}"
    )
    return sql, [*params, limit]
