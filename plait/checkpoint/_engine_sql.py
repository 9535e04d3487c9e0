"""SQL text the SQLite and PostgreSQL dialects share (they differ only in placeholders)."""

from __future__ import annotations

from typing import Any

__all__ = ["page_query"]


def page_query(
    mark: str,
    columns: str,
    thread: tuple[str, str] | None,  # noqa: PLR0913 - one SQL builder
    after: tuple[str, str, str] | None,
    where: dict[str, Any],
    limit: int,
) -> tuple[str, list[Any]]:
    """One page of checkpoint rows, newest first.

    Args:
        mark: The dialect's parameter placeholder (``?`` or ``%s``).
        columns: The checkpoint columns to select, ``c.``-prefixed.
        thread: ``(thread_id, checkpoint_ns)``, or ``None`` for every thread.
        after: Keyset cursor ``(checkpoint_id, thread_id, checkpoint_ns)``: rows strictly older.
        where: Extra column equalities (``step``, ``source``) and ``before`` (an id bound).
        limit: Page size.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if thread is not None:
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
        + " FROM checkpoints"
        + (" WHERE " + " AND ".join(clauses) if clauses else "")
        + f" ORDER BY checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT {mark}"
    )
    return sql, [*params, limit]
