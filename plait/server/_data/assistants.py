"""Assistants in ``plait_server_assistants`` and their versions in ``plait_server_assistant_versions``
(see :mod:`plait.server._assistants`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from plait.server._db import Database, Tx
from plait.server._wire import dumps, loads

__all__ = ["delete", "get", "get_shared", "modify", "newest_first", "version", "versions", "write"]


async def get(db: Database | Tx, assistant_id: str) -> dict[str, Any] | None:
    """The assistant's document, or ``None``."""
    rows = await db.fetch("SELECT doc FROM plait_server_assistants WHERE assistant_id = ?", (assistant_id,))
    return cast("dict[str, Any]", loads(rows[0]["doc"])) if rows else None


async def get_shared(tx: Tx, dialect: str, assistant_id: str) -> dict[str, Any] | None:
    """The assistant's document, or ``None``; on PostgreSQL its row is share-locked until ``tx``
    ends (it is not deleted meanwhile)."""
    share = " FOR SHARE" if dialect == "postgres" else ""
    rows = await tx.fetch(
        f"SELECT doc FROM plait_server_assistants WHERE assistant_id = ?{share}", (assistant_id,)
    )
    return cast("dict[str, Any]", loads(rows[0]["doc"])) if rows else None


async def write(db: Database | Tx, doc: dict[str, Any], *, insert: bool) -> None:
    """Store the assistant's document ``doc`` (``insert``: a new assistant, else its current version
    changes) and keep its version (a version stored already stays as it was)."""
    text = dumps(doc).decode()
    if insert:
        await db.run(
            "INSERT INTO plait_server_assistants (assistant_id, graph_id, name, created_at, updated_at, version, doc) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                doc["assistant_id"],
                doc["graph_id"],
                doc["name"],
                doc["created_at"],
                doc["updated_at"],
                doc["version"],
                text,
            ),
        )
    else:
        await db.run(
            "UPDATE plait_server_assistants SET graph_id = ?, name = ?, updated_at = ?, version = ?, doc = ? "
            "WHERE assistant_id = ?",
            (doc["graph_id"], doc["name"], doc["updated_at"], doc["version"], text, doc["assistant_id"]),
        )
    await db.run(
        "INSERT INTO plait_server_assistant_versions (assistant_id, version, doc) VALUES (?, ?, ?) "
        "ON CONFLICT (assistant_id, version) DO NOTHING",
        (doc["assistant_id"], doc["version"], text),
    )


async def modify(
    db: Database, assistant_id: str, change: Callable[[dict[str, Any]], None]
) -> dict[str, Any] | None:
    """Make the assistant's next version: its current document, read with its row locked and edited
    by ``change``, stored as the version after its highest one, in one transaction (two updates at
    once make two versions, the second from the first). The new document, or ``None``: no such
    assistant."""
    lock = " FOR UPDATE" if db.dialect == "postgres" else ""
    async with db.tx() as tx:
        rows = await tx.fetch(
            f"SELECT doc FROM plait_server_assistants WHERE assistant_id = ?{lock}", (assistant_id,)
        )
        if not rows:
            return None
        doc: dict[str, Any] = loads(rows[0]["doc"])
        top = await tx.fetch(
            "SELECT MAX(version) AS v FROM plait_server_assistant_versions WHERE assistant_id = ?",
            (assistant_id,),
        )
        change(doc)
        highest = top[0]["v"]
        doc["version"] = int(highest if highest is not None else doc["version"]) + 1
        await write(tx, doc, insert=False)
    return doc


async def delete(db: Database, assistant_id: str) -> None:
    """Delete the assistant, its versions and its crons, in one transaction."""
    async with db.tx() as tx:
        for table in ("plait_server_assistants", "plait_server_assistant_versions", "plait_server_crons"):
            await tx.run(f"DELETE FROM {table} WHERE assistant_id = ?", (assistant_id,))


async def newest_first(db: Database) -> list[dict[str, Any]]:
    """Every assistant's document, the newest first."""
    rows = await db.fetch("SELECT doc FROM plait_server_assistants ORDER BY created_at DESC")
    return [loads(r["doc"]) for r in rows]


async def versions(db: Database, assistant_id: str) -> list[dict[str, Any]]:
    """The documents of the assistant's stored versions, the newest first."""
    rows = await db.fetch(
        "SELECT doc FROM plait_server_assistant_versions WHERE assistant_id = ? ORDER BY version DESC",
        (assistant_id,),
    )
    return [loads(r["doc"]) for r in rows]


async def version(db: Database, assistant_id: str, number: int) -> dict[str, Any] | None:
    """The document of the assistant's version ``number``, or ``None``."""
    rows = await db.fetch(
        "SELECT doc FROM plait_server_assistant_versions WHERE assistant_id = ? AND version = ?",
        (assistant_id, number),
    )
    return cast("dict[str, Any]", loads(rows[0]["doc"])) if rows else None
