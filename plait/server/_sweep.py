"""The time-to-live sweep: expired threads deleted (or pruned to their latest state), expired store items deleted.

Each worker sweeps every :func:`~plait.server._ttl.sweep_seconds`, in batches of the config's
``sweep_limit`` (1000 by default) until a batch comes back short. A thread is claimed by the
statement that moves its expiry :data:`RETRY` seconds on, so when several workers share a
database only one acts on it, and a thread whose deletion or pruning failed is tried again
then. Store items are deleted before their vectors, in the order a put writes them.
"""

from __future__ import annotations

import logging
import time

from plait.server._state import ServerState
from plait.server._threads import delete_thread

__all__ = ["RETRY", "sweep"]

RETRY = 60.0
"""Seconds after which an expired thread whose sweep failed is tried again."""

_log = logging.getLogger("plait.server")


async def _threads(state: ServerState, now: float, limit: int) -> tuple[int, int]:
    """One batch of expired threads: ``(found, acted on)``."""
    rows = await state.db.fetch(
        "SELECT thread_id, ttl_strategy FROM plait_server_threads WHERE expires_at IS NOT NULL AND expires_at <= ? "
        "ORDER BY expires_at LIMIT ?",
        (now, limit),
    )
    done = 0
    for row in rows:
        claimed = await state.db.run(
            "UPDATE plait_server_threads SET expires_at = ? "
            "WHERE thread_id = ? AND expires_at IS NOT NULL AND expires_at <= ?",
            (now + RETRY, row["thread_id"], now),
        )
        if not claimed:  # another worker took it, or its ttl was set again meanwhile
            continue
        if row["ttl_strategy"] == "keep_latest":  # safe beside a run writing the thread
            await state.saver.aprune(row["thread_id"], keep_last=1)
            await state.db.run(  # pruned once: the thread stays, without a ttl
                "UPDATE plait_server_threads SET expires_at = NULL, ttl_strategy = NULL "
                "WHERE thread_id = ? AND expires_at = ?",
                (row["thread_id"], now + RETRY),
            )
        else:
            await delete_thread(state, row["thread_id"])
        done += 1
    return len(rows), done


async def sweep(state: ServerState, limit: int = 1000) -> tuple[int, int]:
    """Act on every expired thread and delete every expired store item: ``(threads, items)``."""
    now, threads = time.time(), 0
    while True:
        found, done = await _threads(state, now, limit)
        threads += done
        if found < limit:
            break
    async with state.db.tx() as tx:
        items = await tx.run(
            "DELETE FROM plait_server_store WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
        )
        if items:  # their vectors (an item is written before its vectors: the same lock order)
            await tx.run(
                "DELETE FROM plait_server_store_vectors WHERE NOT EXISTS (SELECT 1 FROM plait_server_store s "
                "WHERE s.prefix = plait_server_store_vectors.prefix AND s.key = plait_server_store_vectors.key)"
            )
    if threads or items:
        _log.info("ttl sweep: %d thread(s), %d store item(s)", threads, items)
    return threads, items
