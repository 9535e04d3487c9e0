"""Crons in ``plait_server_crons`` (see :mod:`plait.server._crons`): a cron's document, with the
columns a search or the firing workers select on (assistant, thread, enabled, next run)."""

from __future__ import annotations

from dataclasses import dataclass

from plait.server._auth_filter import Filter
from plait.server._data.filters import doc_filter_sql, holds_sql, thread_filter_sql
from plait.server._db import Database, Tx
from plait.server._records import CronDoc
from plait.server._wire import dumps, loads

__all__ = [
    "COLUMN_SORTS",
    "CronQuery",
    "Visible",
    "count",
    "delete",
    "due",
    "get",
    "get_locked",
    "next_due",
    "search",
    "write",
]

COLUMN_SORTS = ("cron_id", "assistant_id", "thread_id", "created_at", "updated_at")
"""The fields a search sorts by in SQL (columns of the table); the others (times kept with their
offset inside the document) are sorted by the caller."""


def _doc(text: str) -> CronDoc:
    """A cron's document from its stored JSON."""
    doc: CronDoc = loads(text)
    return doc


async def write(db: Database | Tx, cron: CronDoc, due: float | None, *, insert: bool) -> None:
    """Store the cron's document (``insert``: a new cron), due next at ``due`` (epoch seconds; ``None``: never)."""
    text = dumps(cron).decode()
    enabled = 1 if cron["enabled"] else 0
    if insert:
        await db.run(
            "INSERT INTO plait_server_crons (cron_id, assistant_id, thread_id, enabled, next_run, created_at, "
            "updated_at, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (cron["cron_id"], cron["assistant_id"], cron["thread_id"], enabled, due, cron["created_at"],
             cron["updated_at"], text),
        )  # fmt: skip
    else:
        await db.run(
            "UPDATE plait_server_crons SET enabled = ?, next_run = ?, updated_at = ?, doc = ? WHERE cron_id = ?",
            (enabled, due, cron["updated_at"], text, cron["cron_id"]),
        )


async def get(db: Database, cron_id: str) -> CronDoc | None:
    """The cron's document, or ``None``."""
    rows = await db.fetch("SELECT doc FROM plait_server_crons WHERE cron_id = ?", (cron_id,))
    return _doc(rows[0]["doc"]) if rows else None


async def get_locked(tx: Tx, dialect: str, cron_id: str) -> CronDoc | None:
    """The cron's document, its row locked until ``tx`` ends (PostgreSQL: a worker firing it waits),
    or ``None``."""
    lock = " FOR UPDATE" if dialect == "postgres" else ""
    rows = await tx.fetch(f"SELECT doc FROM plait_server_crons WHERE cron_id = ?{lock}", (cron_id,))
    return _doc(rows[0]["doc"]) if rows else None


async def delete(db: Database, cron_id: str) -> None:
    """Delete the cron."""
    await db.run("DELETE FROM plait_server_crons WHERE cron_id = ?", (cron_id,))


@dataclass(frozen=True)
class Visible:
    """Which crons the config's auth lets a user see (``None``: no filter of that kind)."""

    crons: Filter | None
    """The crons' filter, on their metadata."""
    threads: Filter | None
    """The threads' filter, on a thread's cron's thread (crons of no thread pass it)."""


def _visible_sql(dialect: str, visible: Visible) -> list[tuple[str, list[object]]]:
    found: list[tuple[str, list[object]]] = []
    if visible.crons:
        found.append(doc_filter_sql(dialect, visible.crons))
    if visible.threads:
        sql, params = thread_filter_sql(dialect, visible.threads)
        within = (
            f"(thread_id IS NULL OR thread_id IN (SELECT thread_id FROM plait_server_threads WHERE {sql}))"
        )
        found.append((within, params))
    return found


@dataclass(frozen=True)
class CronQuery:
    """Which crons a search or count selects: of ``assistant_id``, of ``thread_id``, ``enabled`` or
    not (each: when not ``None``), whose metadata holds ``metadata``'s keys with equal values, and
    that ``visible`` lets the user see."""

    assistant_id: str | None
    thread_id: str | None
    enabled: bool | None
    metadata: dict[str, object]
    visible: Visible


def _where(dialect: str, query: CronQuery) -> tuple[str, list[object]]:
    where: list[str] = []
    params: list[object] = []
    for column, value in (("assistant_id", query.assistant_id), ("thread_id", query.thread_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if query.enabled is not None:
        where.append("enabled = ?")
        params.append(1 if query.enabled else 0)
    found = _visible_sql(dialect, query.visible)
    if query.metadata:
        found.append(holds_sql(dialect, query.metadata))
    for condition, more in found:
        where.append(condition)
        params += more
    return (" WHERE " + " AND ".join(where) if where else ""), params


def _order(dialect: str, sort_by: str | None, sort_order: str) -> str:
    """`` ORDER BY ...``: code point order (as Python compares strings), no value first when
    ascending (last when descending), ties by id; ``sort_by`` ``None``: by id alone."""
    collate = ' COLLATE "C"' if dialect == "postgres" else ""
    if sort_by is None or sort_by == "cron_id":
        return f" ORDER BY cron_id{collate} {'DESC' if sort_by and sort_order == 'desc' else 'ASC'}"
    if sort_order not in ("asc", "desc"):
        raise ValueError(f"sort_order must be 'asc' or 'desc', got {sort_order!r}")
    nulls = (" NULLS FIRST" if sort_order == "asc" else " NULLS LAST") if collate else ""
    return f" ORDER BY {sort_by}{collate} {sort_order.upper()}{nulls}, cron_id{collate}"


async def search(  # noqa: PLR0913 - a query, its order and its page
    db: Database, query: CronQuery, sort_by: str | None, sort_order: str, limit: int | None, offset: int
) -> tuple[list[CronDoc], int]:
    """The documents of a page of the crons ``query`` selects (``limit`` ``None``: all of them),
    ordered by the column ``sort_by`` (one of :data:`COLUMN_SORTS`, or ``None``: by id), and how many
    it selects in all."""
    if sort_by is not None and sort_by not in COLUMN_SORTS:
        raise ValueError(f"sort_by must be one of {COLUMN_SORTS}, got {sort_by!r}")
    where, params = _where(db.dialect, query)
    order = _order(db.dialect, sort_by, sort_order)
    page = "" if limit is None else " LIMIT ? OFFSET ?"
    more = [] if limit is None else [max(limit, 0), max(offset, 0)]
    rows = await db.fetch(
        f"SELECT doc, count(*) OVER () AS total FROM plait_server_crons{where}{order}{page}", [*params, *more]
    )
    total = int(rows[0]["total"]) if rows else await _count(db, where, params) if offset > 0 else 0
    return [_doc(r["doc"]) for r in rows], total


async def count(db: Database, query: CronQuery) -> int:
    """How many crons ``query`` selects."""
    return await _count(db, *_where(db.dialect, query))


async def _count(db: Database, where: str, params: list[object]) -> int:
    rows = await db.fetch(f"SELECT count(*) AS n FROM plait_server_crons{where}", params)
    return int(rows[0]["n"])


async def due(tx: Tx, dialect: str, now: float, limit: int) -> list[CronDoc]:
    """The documents of up to ``limit`` enabled crons due at ``now`` (epoch seconds), the earliest
    first; on PostgreSQL their rows locked until ``tx`` ends, skipping those another worker holds."""
    lock = " FOR UPDATE SKIP LOCKED" if dialect == "postgres" else ""
    rows = await tx.fetch(
        "SELECT doc FROM plait_server_crons WHERE enabled = 1 AND next_run <= ? "
        f"ORDER BY next_run LIMIT {int(limit)}{lock}",
        (now,),
    )
    return [_doc(row["doc"]) for row in rows]


async def next_due(db: Database) -> float | None:
    """When the next enabled cron is due (epoch seconds), if any."""
    rows = await db.fetch("SELECT MIN(next_run) AS due FROM plait_server_crons WHERE enabled = 1")
    found = rows[0]["due"] if rows else None
    return None if found is None else float(found)
