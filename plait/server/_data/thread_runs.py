"""A thread's runs as its event stream and protocol commands read them (:mod:`plait.server._thread_events`,
:mod:`plait.server._thread_commands`)."""

from __future__ import annotations

from plait.server._db import Database, Row

__all__ = ["document", "in_order", "latest", "running"]


async def in_order(db: Database, thread_id: str) -> list[Row]:
    """``run_id`` and ``status`` of each of the thread's runs, the oldest first."""
    return await db.fetch(
        "SELECT run_id, status FROM plait_server_runs WHERE thread_id = ? ORDER BY created_at, run_id",
        (thread_id,),
    )


async def document(db: Database, run_id: str) -> str | None:
    """The run's stored document (JSON), ``None``: no such run."""
    rows = await db.fetch("SELECT doc FROM plait_server_runs WHERE run_id = ?", (run_id,))
    return str(rows[0]["doc"]) if rows else None


async def running(db: Database, thread_id: str) -> list[str]:
    """The ids of the thread's running runs."""
    rows = await db.fetch(
        "SELECT run_id FROM plait_server_runs WHERE thread_id = ? AND status = 'running'", (thread_id,)
    )
    return [str(r["run_id"]) for r in rows]


async def latest(db: Database, thread_id: str, run_id: str | None = None) -> Row | None:
    """``run_id`` and ``doc`` of the thread's newest run (of ``run_id``, if given and the thread's)."""
    sql, params = "SELECT run_id, doc FROM plait_server_runs WHERE thread_id = ?", [thread_id]
    if run_id is not None:
        sql, params = sql + " AND run_id = ?", [*params, run_id]
    rows = await db.fetch(sql + " ORDER BY created_at DESC, run_id DESC LIMIT 1", params)
    return rows[0] if rows else None
