"""Assistants in ``plait_server_assistants`` and their versions in ``plait_server_assistant_versions``
(see :mod:`plait.server._assistants`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from plait.server._auth_filter import Filter
from plait.server._data.filters import doc_filter_sql, holds_sql
from plait.server._db import Database, Tx
from plait.server._records import AssistantDoc
from plait.server._wire import ApiError, dumps, loads

__all__ = [
    "SORTS",
    "AssistantQuery",
    "count",
    "delete",
    "get",
    "get_shared",
    "modify",
    "search",
    "version",
    "versions",
    "write",
]

SORTS = ("assistant_id", "graph_id", "name", "created_at", "updated_at")
"""The columns a search sorts by."""


def _doc(text: str) -> AssistantDoc:
    """An assistant's document from its stored JSON."""
    doc: AssistantDoc = loads(text)
    return doc


async def get(db: Database | Tx, assistant_id: str) -> AssistantDoc | None:
    """The assistant's document, or ``None``."""
    rows = await db.fetch("SELECT doc FROM plait_server_assistants WHERE assistant_id = ?", (assistant_id,))
    return _doc(rows[0]["doc"]) if rows else None


async def get_shared(tx: Tx, dialect: str, assistant_id: str) -> AssistantDoc | None:
    """The assistant's document, or ``None``; on PostgreSQL its row is share-locked until ``tx``
    ends (it is not deleted meanwhile)."""
    share = " FOR SHARE" if dialect == "postgres" else ""
    rows = await tx.fetch(
        f"SELECT doc FROM plait_server_assistants WHERE assistant_id = ?{share}", (assistant_id,)
    )
    return _doc(rows[0]["doc"]) if rows else None


async def write(db: Database | Tx, doc: AssistantDoc, *, insert: bool) -> None:
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
    db: Database, assistant_id: str, change: Callable[[AssistantDoc], None]
) -> AssistantDoc | None:
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
        doc = _doc(rows[0]["doc"])
        top = await tx.fetch(
            "SELECT MAX(version) AS v FROM plait_server_assistant_versions WHERE assistant_id = ?",
            (assistant_id,),
        )
        change(doc)
        highest = top[0]["v"]
        doc["version"] = (doc["version"] if highest is None else int(highest)) + 1
        await write(tx, doc, insert=False)
    return doc


async def delete(db: Database, assistant_id: str) -> None:
    """Delete the assistant, its versions and its crons, in one transaction."""
    async with db.tx() as tx:
        for table in ("plait_server_assistants", "plait_server_assistant_versions", "plait_server_crons"):
            await tx.run(f"DELETE FROM {table} WHERE assistant_id = ?", (assistant_id,))


@dataclass(frozen=True)
class AssistantQuery:
    """Which assistants a search or count selects: of ``graph_id``, whose name holds ``name`` (letter
    case aside), whose metadata holds ``metadata``'s keys with equal values (each: when given), and
    what the auth's filter keeps."""

    graph_id: str | None = None
    name: str | None = None
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    auth: Filter | None = None


def _where(dialect: str, query: AssistantQuery) -> tuple[str, list[object]]:
    """`` WHERE ...`` (or ``""``) and its parameters for the assistants ``query`` selects."""
    where: list[str] = []
    params: list[object] = []
    if query.graph_id is not None:
        where.append("graph_id = ?")
        params.append(query.graph_id)
    if query.name is not None:
        postgres = dialect == "postgres"
        where.append("strpos(lower(name), lower(?)) > 0" if postgres else "plait_icontains(name, ?)")
        params.append(query.name)
    found = [holds_sql(dialect, query.metadata)] if query.metadata else []
    if query.auth:
        found.append(doc_filter_sql(dialect, query.auth))
    for sql, more in found:
        where.append(sql)
        params += more
    return (" WHERE " + " AND ".join(where) if where else ""), params


def _order(dialect: str, sort_by: str, sort_order: str) -> str:
    """`` ORDER BY ...``: code point order (as Python compares strings), ties the newest first."""
    if sort_by not in SORTS:
        raise ApiError(422, f"sort_by must be {', '.join(SORTS[:-1])} or {SORTS[-1]}, got {sort_by!r}")
    if sort_order not in ("asc", "desc"):
        raise ApiError(422, f"sort_order must be 'asc' or 'desc', got {sort_order!r}")
    collate = ' COLLATE "C"' if dialect == "postgres" else ""
    ties = "" if sort_by == "created_at" else f", created_at{collate} DESC"
    last = "" if sort_by == "assistant_id" else f", assistant_id{collate}"
    return f" ORDER BY {sort_by}{collate} {sort_order.upper()}{ties}{last}"


async def search(  # noqa: PLR0913 - a query, its order and its page
    db: Database, query: AssistantQuery, sort_by: str, sort_order: str, limit: int, offset: int
) -> tuple[list[AssistantDoc], int]:
    """The documents of a page of the assistants ``query`` selects, ordered by ``sort_by``
    (``sort_order``: ``"asc"`` or ``"desc"``; ties the newest first), and how many it selects in all."""
    where, params = _where(db.dialect, query)
    order = _order(db.dialect, sort_by, sort_order)
    rows = await db.fetch(
        f"SELECT doc, count(*) OVER () AS total FROM plait_server_assistants{where}{order} LIMIT ? OFFSET ?",
        [*params, max(limit, 0), max(offset, 0)],
    )
    total = int(rows[0]["total"]) if rows else await _count(db, where, params) if offset > 0 else 0
    return [_doc(r["doc"]) for r in rows], total


async def count(db: Database, query: AssistantQuery) -> int:
    """How many assistants ``query`` selects."""
    return await _count(db, *_where(db.dialect, query))


async def _count(db: Database, where: str, params: list[object]) -> int:
    rows = await db.fetch(f"SELECT count(*) AS n FROM plait_server_assistants{where}", params)
    return int(rows[0]["n"])


async def versions(db: Database, assistant_id: str) -> list[AssistantDoc]:
    """The documents of the assistant's stored versions, the newest first."""
    rows = await db.fetch(
        "SELECT doc FROM plait_server_assistant_versions WHERE assistant_id = ? ORDER BY version DESC",
        (assistant_id,),
    )
    return [_doc(r["doc"]) for r in rows]


async def version(db: Database, assistant_id: str, number: int) -> AssistantDoc | None:
    """The document of the assistant's version ``number``, or ``None``."""
    rows = await db.fetch(
        "SELECT doc FROM plait_server_assistant_versions WHERE assistant_id = ? AND version = ?",
        (assistant_id, number),
    )
    return _doc(rows[0]["doc"]) if rows else None
