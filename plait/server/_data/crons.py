"""Crons in ``plait_server_crons`` (see :mod:`plait.server._crons`): a cron's document, with the
columns a search or the firing workers select on (assistant, thread, enabled, next run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from plait.server._auth_filter import Filter
from plait.server._data.filters import doc_filter_sql, thread_filter_sql
from plait.server._db import Database, Tx
from plait.server._wire import dumps, loads

__all__ = ["Visible", "delete", "due", "get", "get_locked", "next_due", "search", "write"]


async def write(db: Database | Tx, cron: dict[str, Any], due: float | None, *, insert: bool) -> None:
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


async def get(db: Database, cron_id: str) -> dict[str, Any] | None:
    """The cron's document, or ``None``."""
    rows = await db.fetch("SELECT doc FROM plait_server_crons WHERE cron_id = ?", (cron_id,))
    return cast("dict[str, Any]", loads(rows[0]["doc"])) if rows else None


async def get_locked(tx: Tx, dialect: str, cron_id: str) -> dict[str, Any] | None:
    """The cron's document, its row locked until ``tx`` ends (PostgreSQL: a worker firing it waits),
    or ``None``."""
    lock = " FOR UPDATE" if dialect == "postgres" else ""
    rows = await tx.fetch(f"SELECT doc FROM plait_server_crons WHERE cron_id = ?{lock}", (cron_id,))
    return cast("dict[str, Any]", loads(rows[0]["doc"])) if rows else None


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


def _visible_sql(dialect: str, visible: Visible) -> list[tuple[str, list[Any]]]:
    found: list[tuple[str, list[Any]]] = []
    if visible.crons:
        found.append(doc_filter_sql(dialect, visible.crons))
    if visible.threads:
        sql, params = thread_filter_sql(dialect, visible.threads)
        within = (
            f"(thread_id IS NULL OR thread_id IN (SELECT thread_id FROM plait_server_threads WHERE {sql}))"
        )
        found.append((within, params))
    return found


async def search(
    db: Database, assistant_id: str | None, thread_id: str | None, enabled: bool | None, visible: Visible
) -> list[dict[str, Any]]:
    """The documents of the crons of ``assistant_id``, of ``thread_id``, ``enabled`` or not (each:
    when not ``None``) that ``visible`` lets the user see."""
    where: list[str] = []
    params: list[Any] = []
    if assistant_id is not None:
        where.append("assistant_id = ?")
        params.append(assistant_id)
    if thread_id is not None:
        where.append("thread_id = ?")
        params.append(thread_id)
    if enabled is not None:
        where.append("enabled = ?")
        params.append(1 if enabled else 0)
    for condition, more in _visible_sql(db.dialect, visible):
        where.append(condition)
        params += more
    sql = "SELECT doc FROM plait_server_crons" + (" WHERE " + " AND ".join(where) if where else "")
    return [cast("dict[str, Any]", loads(r["doc"])) for r in await db.fetch(sql, params)]


async def due(tx: Tx, dialect: str, now: float, limit: int) -> list[dict[str, Any]]:
    """The documents of up to ``limit`` enabled crons due at ``now`` (epoch seconds), the earliest
    first; on PostgreSQL their rows locked until ``tx`` ends, skipping those another worker holds."""
    lock = " FOR UPDATE SKIP LOCKED" if dialect == "postgres" else ""
    rows = await tx.fetch(
        "SELECT doc FROM plait_server_crons WHERE enabled = 1 AND next_run <= ? "
        f"ORDER BY next_run LIMIT {int(limit)}{lock}",
        (now,),
    )
    return [cast("dict[str, Any]", loads(row["doc"])) for row in rows]


async def next_due(db: Database) -> float | None:
    """When the next enabled cron is due (epoch seconds), if any."""
    rows = await db.fetch("SELECT MIN(next_run) AS due FROM plait_server_crons WHERE enabled = 1")
    found = rows[0]["due"] if rows else None
    return None if found is None else float(found)
