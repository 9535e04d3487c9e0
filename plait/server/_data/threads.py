"""Threads in ``plait_server_threads`` (see :mod:`plait.server._threads`): a thread's document, its
status, values (a column of their own) and time to live; searches (their SQL:
:mod:`~plait.server._data.thread_search`) and what the time-to-live sweep reads and claims
(see :mod:`plait.server._sweep`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from plait.server._auth_filter import Filter
from plait.server._data.filters import thread_filter_sql
from plait.server._data.thread_search import order_sql, where_sql
from plait.server._db import Database, Row, Tx
from plait.server._records import ThreadDoc
from plait.server._wire import dumps, loads

__all__ = [
    "ThreadQuery",
    "claim_expired",
    "count",
    "delete",
    "delete_unused",
    "document",
    "expired",
    "forget_ttl",
    "get",
    "get_shared",
    "insert",
    "modify",
    "search",
    "set_ttl",
    "ttl",
    "write",
]


def document(row: Row, *, values: bool = True) -> ThreadDoc:
    """A thread row (``status``, ``updated_at``, ``doc``, ``vals``) as the API's document: its values
    come from their own column."""
    doc: ThreadDoc = loads(row["doc"])
    doc["status"], doc["updated_at"] = row["status"], row["updated_at"]
    if values:
        doc["values"] = None if row["vals"] is None else loads(row["vals"])
    return doc


async def get(db: Database | Tx, thread_id: str) -> ThreadDoc | None:
    """The thread's document (with its status and values), or ``None``."""
    rows = await db.fetch(
        "SELECT status, updated_at, doc, vals FROM plait_server_threads WHERE thread_id = ?", (thread_id,)
    )
    return document(rows[0]) if rows else None


def _vals(values: object) -> str | None:
    return None if values is None else dumps(values).decode()


async def write(db: Database | Tx, doc: ThreadDoc) -> None:
    """Store a thread's document (status and updated_at as columns too, values in their own)."""
    rest = {k: v for k, v in doc.items() if k != "values"}
    await db.run(
        "UPDATE plait_server_threads SET status = ?, updated_at = ?, doc = ?, vals = ? WHERE thread_id = ?",
        (doc["status"], doc["updated_at"], dumps(rest).decode(), _vals(doc.get("values")), doc["thread_id"]),
    )


async def modify(db: Database, thread_id: str, change: Callable[[ThreadDoc], None]) -> ThreadDoc | None:
    """Read the thread's document (with its status and values) with its row locked, let ``change``
    edit it, and store it, in one transaction: what another writer stored meanwhile (a run's end,
    another request's change) is what ``change`` sees, never undone. The stored document, or
    ``None``: there is no such thread."""
    lock = " FOR UPDATE" if db.dialect == "postgres" else ""
    async with db.tx() as tx:
        rows = await tx.fetch(
            f"SELECT status, updated_at, doc, vals FROM plait_server_threads WHERE thread_id = ?{lock}",
            (thread_id,),
        )
        if not rows:
            return None
        doc = document(rows[0])
        change(doc)
        await write(tx, doc)
    return doc


async def insert(
    db: Database | Tx, doc: ThreadDoc, expires_at: float | None, ttl_strategy: str | None
) -> None:
    """Insert a new idle thread of document ``doc`` (no values yet), swept at ``expires_at``
    (epoch seconds; ``None``: never) by ``ttl_strategy``."""
    await db.run(
        "INSERT INTO plait_server_threads (thread_id, status, created_at, updated_at, doc, expires_at, ttl_strategy) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            doc["thread_id"],
            "idle",
            doc["created_at"],
            doc["updated_at"],
            dumps(doc).decode(),
            expires_at,
            ttl_strategy,
        ),
    )


async def set_ttl(db: Database, thread_id: str, expires_at: float | None, ttl_strategy: str | None) -> None:
    """The thread is swept at ``expires_at`` (epoch seconds) by ``ttl_strategy``."""
    await db.run(
        "UPDATE plait_server_threads SET expires_at = ?, ttl_strategy = ? WHERE thread_id = ?",
        (expires_at, ttl_strategy, thread_id),
    )


async def ttl(db: Database, thread_id: str) -> tuple[float, str | None] | None:
    """When the thread expires (epoch seconds) and its strategy; ``None``: it has no time to live."""
    rows = await db.fetch(
        "SELECT expires_at, ttl_strategy FROM plait_server_threads WHERE thread_id = ?", (thread_id,)
    )
    at = rows[0]["expires_at"] if rows else None
    return None if at is None else (float(at), rows[0]["ttl_strategy"])


async def delete_unused(db: Database, thread_id: str, updated_at: str) -> bool:
    """Delete the thread unless it changed since ``updated_at`` or has runs; whether it was deleted."""
    return bool(
        await db.run(
            "DELETE FROM plait_server_threads WHERE thread_id = ? AND updated_at = ? "
            "AND NOT EXISTS (SELECT 1 FROM plait_server_runs WHERE thread_id = ?)",
            (thread_id, updated_at, thread_id),
        )
    )


async def delete(db: Database, thread_id: str) -> None:
    """Delete the thread's row, its runs and its crons, in one transaction.

    The thread's row is locked first (PostgreSQL), then its runs are deleted: the order a run's end
    (:func:`plait.server._data.runs.finish`) locks them in.
    """
    lock = " FOR UPDATE" if db.dialect == "postgres" else ""
    async with db.tx() as tx:  # the thread's row first, then its runs: the order a run's end locks them
        await tx.fetch(f"SELECT 1 FROM plait_server_threads WHERE thread_id = ?{lock}", (thread_id,))
        await tx.run("DELETE FROM plait_server_runs WHERE thread_id = ?", (thread_id,))
        await tx.run("DELETE FROM plait_server_threads WHERE thread_id = ?", (thread_id,))
        await tx.run("DELETE FROM plait_server_crons WHERE thread_id = ?", (thread_id,))


@dataclass(frozen=True)
class ThreadQuery:
    """Which threads a search or count selects: metadata and values that hold these top-level keys
    with equal values, a ``status``, ``ids`` (each: when given), and what the auth's filter keeps."""

    metadata: dict[str, object]
    values: dict[str, object]
    status: str | None = None
    ids: list[str] | None = None
    auth: Filter | None = None


def _where(dialect: str, query: ThreadQuery) -> tuple[str, list[object]]:
    """`` WHERE ...`` and its parameters for the threads ``query`` selects."""
    where, params = where_sql(dialect, query.metadata, query.values, query.status, query.ids)
    if not query.auth:
        return where, params
    sql, more = thread_filter_sql(dialect, query.auth)
    return f"{where} AND {sql}" if where else f" WHERE {sql}", [*params, *more]


async def search(  # noqa: PLR0913 - a query, its order and its page
    db: Database, query: ThreadQuery, sort_by: str, sort_order: str, limit: int, offset: int
) -> tuple[list[Row], int]:
    """The rows (``status``, ``updated_at``, ``doc``, ``vals``) of a page of the threads ``query``
    selects, ordered by ``sort_by`` (``sort_order``: ``"asc"`` or ``"desc"``), and how many it
    selects in all."""
    where, params = _where(db.dialect, query)
    order = order_sql(db.dialect, sort_by, sort_order)
    rows = await db.fetch(
        "SELECT status, updated_at, doc, vals, count(*) OVER () AS total FROM plait_server_threads"
        f"{where}{order} LIMIT ? OFFSET ?",
        [*params, max(limit, 0), max(offset, 0)],
    )
    total = int(rows[0]["total"]) if rows else await _count(db, where, params) if offset > 0 else 0
    return rows, total


async def count(db: Database, query: ThreadQuery) -> int:
    """How many threads ``query`` selects."""
    return await _count(db, *_where(db.dialect, query))


async def _count(db: Database, where: str, params: list[object]) -> int:
    rows = await db.fetch(f"SELECT count(*) AS n FROM plait_server_threads{where}", params)
    return int(rows[0]["n"])


async def get_shared(tx: Tx, dialect: str, thread_id: str) -> ThreadDoc | None:
    """The thread's document, or ``None``; on PostgreSQL its row is share-locked until ``tx`` ends
    (it is not deleted meanwhile)."""
    share = " FOR SHARE" if dialect == "postgres" else ""
    rows = await tx.fetch(f"SELECT doc FROM plait_server_threads WHERE thread_id = ?{share}", (thread_id,))
    if not rows:
        return None
    doc: ThreadDoc = loads(rows[0]["doc"])
    return doc


async def expired(db: Database, now: float, limit: int) -> list[Row]:
    """Up to ``limit`` threads whose time to live ran out by ``now``, the earliest first:
    ``thread_id`` and ``ttl_strategy`` of each."""
    return await db.fetch(
        "SELECT thread_id, ttl_strategy FROM plait_server_threads WHERE expires_at IS NOT NULL AND expires_at <= ? "
        "ORDER BY expires_at LIMIT ?",
        (now, limit),
    )


async def claim_expired(db: Database, thread_id: str, now: float, lease: float) -> bool:
    """Claim an expired thread until ``lease`` (its expiry moves there); False: another worker took it,
    or its ttl was set again meanwhile."""
    return bool(
        await db.run(
            "UPDATE plait_server_threads SET expires_at = ? "
            "WHERE thread_id = ? AND expires_at IS NOT NULL AND expires_at <= ?",
            (lease, thread_id, now),
        )
    )


async def forget_ttl(db: Database, thread_id: str, lease: float) -> None:
    """A thread pruned under the claim ``lease`` keeps no ttl (unless one was set again meanwhile)."""
    await db.run(
        "UPDATE plait_server_threads SET expires_at = NULL, ttl_strategy = NULL WHERE thread_id = ? AND expires_at = ?",
        (thread_id, lease),
    )
