"""Threads in ``plait_server_threads``: what the time-to-live sweep reads and claims
(see :mod:`plait.server._sweep`)."""

from __future__ import annotations

from plait.server._db import Database, Row

__all__ = ["claim_expired", "expired", "forget_ttl"]


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
