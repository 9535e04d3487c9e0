"""Schema step 3: the server's store moves into :mod:`plait.store`'s tables.

Until version 2 the server kept its long-term store in tables of its own (``plait_server_store``,
``plait_server_store_vectors``); from version 3 its store is a :mod:`plait.store` store on the same
database (``plait_store``, ``plait_store_vectors``). This step copies every item, with its times,
expiry and time to live, and every vector of an item, then drops the old tables; it runs once,
inside the migration's transaction (nothing is copied twice, and a failure leaves the old tables).
An item already in ``plait_store`` (the same namespace and key) is kept as it is.

On PostgreSQL the vectors' table is made as :mod:`plait.store` makes it (pgvector's type where the
server has pgvector), for the length of the vectors stored; vectors of another length (left by an
earlier embedder) could never be ranked against a query and are left out, with a warning.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from datetime import datetime
from typing import Any

from plait.store._rank import unpack
from plait.store._statement import Rows, Sql, adrive
from plait.store.sqlite._sql import MIGRATIONS as SQLITE_MIGRATIONS

_pg: Any
try:
    from plait.store.postgres import _sql as _pg
except ImportError:  # pragma: no cover - without the 'postgres' extra only SQLite is served
    _pg = None

__all__ = ["pg_move_store", "sqlite_move_store"]

_log = logging.getLogger("plait.server")
_OLD = "plait_server_store"
_OLD_VECTORS = "plait_server_store_vectors"
_CHUNK = 1000


def _epoch(text: str) -> float:
    """An ISO 8601 time (as the old table stored them) as epoch seconds (as ``plait_store`` does)."""
    return datetime.fromisoformat(text).timestamp()


def _warn_dropped(dropped: int, dims: int) -> None:
    if dropped:
        _log.warning(
            "store migration: %d vector(s) whose length is not %d left out (an earlier embedder's); "
            "their items are kept and are found again once written anew",
            dropped,
            dims,
        )


def sqlite_move_store(conn: sqlite3.Connection) -> None:
    """Copy the old store tables into ``plait_store`` and drop them (inside the caller's transaction)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for statement in SQLITE_MIGRATIONS:
        conn.execute(statement)
    if _OLD not in tables:
        return
    columns = {r[1] for r in conn.execute(f"PRAGMA table_info({_OLD})")}
    expires = "expires_at" if "expires_at" in columns else "NULL"
    minutes = "ttl_minutes" if "ttl_minutes" in columns else "NULL"
    conn.create_function("plait_epoch", 1, _epoch, deterministic=True)
    conn.execute(
        "INSERT INTO plait_store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) "
        f"SELECT prefix, key, value, plait_epoch(created_at), plait_epoch(updated_at), {expires}, {minutes} "
        f"FROM {_OLD} WHERE true ON CONFLICT (prefix, key) DO NOTHING"
    )
    if _OLD_VECTORS in tables:
        lengths = Counter(
            int(r[0]) for r in conn.execute(f"SELECT length(vector) FROM {_OLD_VECTORS}") if r[0] is not None
        )
        if lengths:
            size = lengths.most_common(1)[0][0]
            conn.execute(
                "INSERT INTO plait_store_vectors (prefix, key, field, embedding) "
                f"SELECT v.prefix, v.key, v.field, v.vector FROM {_OLD_VECTORS} v "
                f"JOIN {_OLD} s ON s.prefix = v.prefix AND s.key = v.key WHERE length(v.vector) = ? "
                "ON CONFLICT (prefix, key, field) DO NOTHING",
                (size,),
            )
            _warn_dropped(sum(lengths.values()) - lengths[size], size // 4)
        conn.execute(f"DROP TABLE {_OLD_VECTORS}")
    conn.execute(f"DROP TABLE {_OLD}")


async def _fetch(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    cur = await conn.execute(sql, params)
    return list(await cur.fetchall()) if cur.description is not None else []


async def pg_move_store(conn: Any) -> None:
    """Copy the old store tables into ``plait_store`` and drop them (inside the caller's transaction,
    under the server's set-up lock)."""
    found = await _fetch(
        conn,
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name IN (%s, %s)",
        (_OLD, _OLD_VECTORS),
    )
    columns = {(str(t), str(c)) for t, c in found}
    tables = {t for t, _ in columns}
    lengths: Counter[int] = Counter()
    if _OLD_VECTORS in tables:
        rows = await _fetch(conn, f"SELECT octet_length(vector), count(*) FROM {_OLD_VECTORS} GROUP BY 1")
        lengths = Counter({int(n): int(c) for n, c in rows if n})
    dims = lengths.most_common(1)[0][0] // 4 if lengths else None
    dialect = _pg.PostgresDialect(dims, {"vector_type": "vector"})  # (the store's default HNSW settings)

    async def execute(sql: Sql) -> Rows:
        cur = await conn.execute(sql.text, sql.params)
        return list(await cur.fetchall()) if cur.description is not None else []

    dialect.vector = await adrive(_pg.setup_step(list(_pg.MIGRATIONS), dims, dialect.ann, "cosine"), execute)
    if _OLD not in tables:
        return
    expires = "to_timestamp(expires_at)" if (_OLD, "expires_at") in columns else "NULL"
    minutes = "ttl_minutes" if (_OLD, "ttl_minutes") in columns else "NULL"
    await conn.execute(
        "INSERT INTO plait_store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) "
        f"SELECT prefix, key, value::jsonb, created_at::timestamptz, updated_at::timestamptz, {expires}, "
        f"{minutes} FROM {_OLD} ON CONFLICT (prefix, key) DO NOTHING"
    )
    if dims is not None:
        await _pg_move_vectors(conn, dialect, dims)
        _warn_dropped(sum(lengths.values()) - lengths[dims * 4], dims)
    await conn.execute(f"DROP TABLE IF EXISTS {_OLD_VECTORS}, {_OLD}")


async def _pg_move_vectors(conn: Any, dialect: Any, dims: int) -> None:
    """The old vectors of the items copied, read through a server-side cursor ``_CHUNK`` at a time,
    written as the store writes them."""
    async with conn.cursor(name="plait_move_vectors") as cur:
        await cur.execute(
            f"SELECT v.prefix, v.key, v.field, v.vector FROM {_OLD_VECTORS} v "
            "JOIN plait_store s ON s.prefix = v.prefix AND s.key = v.key WHERE octet_length(v.vector) = %s "
            "AND NOT EXISTS (SELECT 1 FROM plait_store_vectors n "
            "WHERE n.prefix = v.prefix AND n.key = v.key AND n.field = v.field)",
            (dims * 4,),
        )
        while rows := await cur.fetchmany(_CHUNK):
            vectors = [(str(p), str(k), str(f), unpack(bytes(v))) for p, k, f, v in rows]
            for sql in dialect.put_vectors(vectors):
                await conn.execute(sql.text, sql.params)
