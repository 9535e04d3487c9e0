"""Pruning old checkpoints of one namespace of a SQL saver, inside the caller's write transaction."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Protocol

from plait.checkpoint._delta import DELTA, FULL, Blob, rebuild
from plait.checkpoint._engine_ops import Step
from plait.checkpoint.serde import Serializer
from plait.errors import SerializationError

__all__ = ["SqlSaver", "lock_name", "locations", "prune_namespace", "prune_thread"]


class SqlSaver(Protocol):
    """What pruning uses of a SQL saver."""

    serde: Serializer
    sql: Any

    def decode(self, data: bytes, what: str, *, record: bool = True) -> Any:
        """A stored record, or ``SerializationError`` naming ``what``."""


def lock_name(thread: tuple[str, str]) -> str:
    """The advisory lock that serialises writers and pruning of one (thread, namespace)."""
    return f"{len(thread[0])}:{thread[0]}{thread[1]}"


Body = Generator[Step, Any, Any]
"""A write transaction's body: the statements it runs, each answered with its rows (or row count)."""


def prune_thread(saver: SqlSaver, thread_id: str, keep_last: int | None, cutoff: str | None) -> Body:
    """Prune every namespace of ``thread_id`` as one write transaction; return the count deleted.

    The namespaces are locked first (PostgreSQL: the advisory locks every put of them takes),
    then their rows are read, so what is kept is decided on what is committed.
    """
    sql = saver.sql
    namespaces = [r[0] for r in (yield Step(sql.NAMESPACES, [thread_id]))]
    if sql.LOCK_THREAD:
        for ns in namespaces:
            yield Step(sql.LOCK_THREAD, [lock_name((thread_id, ns))])
    by_ns: dict[str, list[tuple[str, str, bytes]]] = {}
    for ns, cid, created, blob in (yield Step(sql.PRUNE_ROWS, [thread_id])):
        if ns in namespaces:  # a namespace created after the locks were taken waits for the next prune
            by_ns.setdefault(ns, []).append((cid, str(created), blob))
    deleted = 0
    for ns, rows in by_ns.items():  # newest first: the head (index 0) always stays
        doomed = [
            cid
            for i, (cid, created, _) in enumerate(rows)
            if i > 0
            and ((keep_last is not None and i >= keep_last) or (cutoff is not None and created < cutoff))
        ]
        if doomed:
            gone = set(doomed)
            yield from prune_namespace(
                saver, (thread_id, ns), doomed, [(c, b) for c, _, b in rows if c not in gone]
            )
            deleted += len(doomed)
    return deleted


def locations(stored: dict[str, str], cid: str) -> dict[str, str]:
    """Where each key's value is stored; ``""`` (stored for brevity) means this very checkpoint."""
    return {ch: rid or cid for ch, rid in stored.items()}


def prune_namespace(
    saver: SqlSaver, thread: tuple[str, str], doomed: list[str], kept: list[tuple[str, bytes]]
) -> Body:
    """Delete ``doomed`` checkpoints of one namespace within the write transaction.

    ``kept`` are the ``(id, record)`` rows of the checkpoints that stay; every value row
    they need stays too, and a delta whose base goes is rewritten in full under its id.

    Raises:
        SerializationError: a row the kept checkpoints need is missing or unreadable.
    """
    needed: dict[str, set[str]] = {}
    for cid, blob in kept:
        record = saver.decode(blob, f"checkpoint {cid} of thread {thread[0]!r}")
        for channel, rid in locations(record.get("loc", {}), cid).items():
            needed.setdefault(channel, set()).add(rid)
    targets = [(ch, rid) for ch, ids in needed.items() for rid in ids]
    rows: dict[str, dict[str, Blob]] = {}
    chain_rows: list[tuple[Any, ...]] = (
        (yield Step(*saver.sql.chain_query(thread, targets))) if targets else []
    )
    for ch, rid, prev, kind, value in chain_rows:
        rows.setdefault(ch, {})[rid] = Blob(kind, prev, bytes(value))
    rebased: list[tuple[Any, ...]] = []
    for ch, rid in targets:
        row = rows.get(ch, {}).get(rid)
        if row is None:
            raise SerializationError(
                f"Cannot prune thread {thread[0]!r}: the value of key {ch!r} stored at "
                f"{rid} is missing; nothing was deleted",
                key=ch,
            )
        if row.kind == DELTA and row.prev not in needed[ch]:
            try:
                entry = rebuild(rid, rows[ch], {}, saver.serde.loads)[rid]
            except KeyError as exc:
                raise SerializationError(
                    f"Cannot prune thread {thread[0]!r}: the value of key {ch!r} at {rid} "
                    f"is incomplete (missing row {exc}); nothing was deleted",
                    key=ch,
                ) from None
            rebased.append((*thread, ch, rid, None, FULL, saver.serde.dumps(list(entry.items or ()))))
    present = yield Step(saver.sql.BLOB_KEYS, list(thread))
    drop = [(*thread, ch, rid) for ch, rid in present if rid not in needed.get(ch, ())]
    for sql, params in (
        (saver.sql.INSERT_BLOB, rebased),
        (saver.sql.DELETE_BLOB, drop),
        (saver.sql.DELETE_CHECKPOINT, [(*thread, cid) for cid in doomed]),
        (saver.sql.DELETE_WRITES_OF, [(*thread, cid) for cid in doomed]),
    ):
        if params:
            yield Step(sql, params, True)
