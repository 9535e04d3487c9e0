"""The time-to-live sweep: expired threads deleted (or pruned to their latest state), expired store items deleted.

Each worker sweeps every :func:`~plait.server._ttl.sweep_seconds`. A thread is claimed by the
statement that clears its expiry, so when several workers share a database only one acts on it.
"""

from __future__ import annotations

import logging
import time

from plait.server._state import ServerState
from plait.server._threads import delete_thread

__all__ = ["BATCH", "sweep"]

BATCH = 100
"""Most expired threads one sweep handles (the next sweep takes the rest)."""

_log = logging.getLogger("plait.server")


async def sweep(state: ServerState) -> tuple[int, int]:
    """Act on every expired thread (up to :data:`BATCH`) and delete expired store items: ``(threads, items)``."""
    now = time.time()
    rows = await state.db.fetch(
        "SELECT thread_id, ttl_strategy FROM plait_server_threads WHERE expires_at IS NOT NULL AND expires_at <= ? "
        "ORDER BY expires_at LIMIT ?",
        (now, BATCH),
    )
    threads = 0
    for row in rows:
        claimed = await state.db.run(
            "UPDATE plait_server_threads SET expires_at = NULL, ttl_strategy = NULL "
            "WHERE thread_id = ? AND expires_at IS NOT NULL AND expires_at <= ?",
            (row["thread_id"], now),
        )
        if not claimed:  # another worker took it, or its ttl was set again meanwhile
            continue
        if row["ttl_strategy"] == "keep_latest":  # safe beside a run writing the thread
            await state.saver.aprune(row["thread_id"], keep_last=1)
        else:
            await delete_thread(state, row["thread_id"])
        threads += 1
    async with state.db.tx() as tx:  # an expired item's vectors go with it
        await tx.run(
            "DELETE FROM plait_server_store_vectors WHERE (prefix, key) IN (SELECT prefix, key "
            "FROM plait_server_store WHERE expires_at IS NOT NULL AND expires_at <= ?)",
            (now,),
        )
        items = await tx.run(
            "DELETE FROM plait_server_store WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
        )
    if threads or items:
        _log.info("ttl sweep: %d thread(s), %d store item(s)", threads, items)
    return threads, items
