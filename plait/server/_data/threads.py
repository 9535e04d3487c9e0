"""Threads in ``plait_server_threads``: what the time-to-live sweep reads and claims
(see :mod:`plait.server._sweep`)."""

from __future__ import annotations

from typing import Any, cast

from plait.server._db import Database, Row, Tx
from plait.server._wire import loads

__all__ = ["claim_expired", "expired", "forget_ttl", "get_shared"]


async def get_shared(tx: Tx, dialect: str, thread_id: str) -> dict[str, Any] | None:
    """The thread's document, or ``None``; on PostgreSQL its row is share-locked until ``tx`` ends
    (it is not deleted meanwhile)."""
    share = " FOR SHARE" if dialect == "postgres" else ""
    rows = await tx.fetch(f"SELECT doc FROM plait_server_threads WHERE thread_id = ?{share}", (thread_id,))
    return cast("dict[str, Any]", loads(rows[0]["doc"])) if rows else None


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
