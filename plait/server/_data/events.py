"""Run events in ``plait_server_events``: what a run's worker shares with the others on PostgreSQL and
what a follower on another worker reads (see :mod:`plait.server._stream`)."""

from __future__ import annotations

from plait.server._db import Database, Row

__all__ = ["after", "insert_events", "last_seq", "write"]


def insert_events(run_id: str, rows: list[tuple[int, str, bytes]]) -> tuple[str, list[object]]:
    """One ``INSERT`` of a run's events (a retried write keeps the rows already there), and its parameters."""
    values = ", ".join("(?, ?, ?, ?)" for _ in rows)
    params: list[object] = []
    for seq, event, data in rows:
        params += (run_id, seq, event, data.decode())
    return (
        f"INSERT INTO plait_server_events (run_id, seq, event, data) VALUES {values} "
        "ON CONFLICT (run_id, seq) DO NOTHING",
        params,
    )


async def last_seq(db: Database, run_id: str) -> int:
    """The number of the run's last stored event (0: none)."""
    rows = await db.fetch("SELECT MAX(seq) AS m FROM plait_server_events WHERE run_id = ?", (run_id,))
    return int(rows[0]["m"] or 0)


async def write(db: Database, run_id: str, rows: list[tuple[int, str, bytes]]) -> None:
    """Store the run's events ``rows`` and notify ``plait_server_event`` with its id, in one statement
    (PostgreSQL)."""
    insert, params = insert_events(run_id, rows)
    await db.run(f"WITH e AS ({insert}) SELECT pg_notify('plait_server_event', ?)", [*params, run_id])


async def after(db: Database, run_id: str, seq: int) -> list[Row]:
    """The run's stored events numbered above ``seq``, in order: ``seq``, ``event`` and ``data`` of each."""
    return await db.fetch(
        "SELECT seq, event, data FROM plait_server_events WHERE run_id = ? AND seq > ? ORDER BY seq",
        (run_id, seq),
    )
