"""The time-to-live sweep: expired threads deleted (or pruned to their latest state), expired store items deleted.

Each worker sweeps every :func:`~plait.server._ttl.sweep_seconds`, in batches of the config's
``sweep_limit`` (1000 by default) until a batch comes back short. A thread is claimed by the
statement that moves its expiry :data:`RETRY` seconds on, so when several workers share a
database only one acts on it, and a thread whose deletion or pruning failed is tried again
then. Expired store items (and their vectors) are deleted by the store's own sweep.
"""

from __future__ import annotations

import asyncio
import logging
import time

from plait.server._data import threads
from plait.server._state import ServerState
from plait.server._threads import delete_thread

__all__ = ["RETRY", "sweep"]

RETRY = 60.0
"""Seconds after which an expired thread whose sweep failed is tried again."""

_log = logging.getLogger("plait.server")


async def _one(state: ServerState, thread_id: str, strategy: str | None, now: float) -> bool:
    """Claim one expired thread (for :data:`RETRY` seconds) and delete or prune it; False: not ours."""
    lease = time.time() + RETRY
    if not await threads.claim_expired(
        state.db, thread_id, now, lease
    ):  # another worker took it, or its ttl was set again meanwhile
        return False
    if strategy == "keep_latest":  # safe beside a run writing the thread
        await state.saver.aprune(thread_id, keep_last=1)
        await threads.forget_ttl(state.db, thread_id, lease)  # pruned once: the thread stays, without a ttl
    else:
        await delete_thread(state, thread_id)
    return True


async def _threads(state: ServerState, now: float, limit: int) -> tuple[int, int]:
    """One batch of expired threads: ``(found, acted on)``. A thread that fails is logged and left to
    its lease (tried again after :data:`RETRY` seconds); the others go on."""
    rows = await threads.expired(state.db, now, limit)
    done = 0
    for row in rows:
        try:
            done += await _one(state, row["thread_id"], row["ttl_strategy"], now)
        except Exception:  # noqa: BLE001 - this thread's turn comes again after its lease
            _log.exception("ttl sweep: thread %s could not be deleted or pruned", row["thread_id"])
        await asyncio.sleep(0)  # SQLite's statements run on the event loop: let requests in between
    return len(rows), done


async def sweep(state: ServerState, limit: int = 1000) -> tuple[int, int]:
    """Act on every expired thread and delete every expired store item: ``(threads, items)``."""
    now, threads = time.time(), 0
    while True:
        found, done = await _threads(state, now, limit)
        threads += done
        if found < limit or not done:  # the rest is leased by others, or failing: the next sweep
            break
    items = await state.store.sweep_ttl()
    if threads or items:
        _log.info("ttl sweep: %d thread(s), %d store item(s)", threads, items)
    return threads, items
