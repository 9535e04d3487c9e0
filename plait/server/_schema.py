"""Versioned migrations of the server's tables: a version row, ordered steps, newer databases refused.

Version 1 is the schema the start-up DDL of :mod:`plait.server._db` makes (and upgrades older
tables to); each later version is one step here, applied once, in order, under the set-up lock.
A database whose version is newer than :data:`SCHEMA_VERSION` is refused with nothing changed.
A step is a list of statements, or a function of the connection (version 3: the store's rows move
into :mod:`plait.store`'s tables, :mod:`plait.server._store_tables`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from typing_extensions import LiteralString

from plait.errors import SchemaVersionError
from plait.server._auth_filter import auth_match
from plait.server._store_tables import pg_move_store, sqlite_move_store
from plait.server._wire import as_dict, loads

__all__ = ["SCHEMA_VERSION", "pg_check", "pg_migrate", "sqlite_check", "sqlite_functions", "sqlite_migrate"]

_TABLE: LiteralString = "CREATE TABLE IF NOT EXISTS plait_server_schema (version INTEGER NOT NULL)"

# SQLite: a (key, value) -> thread side table of every thread's top-level metadata, kept by triggers
_META_JSON: LiteralString = (
    "FROM json_each(new.doc, '$.metadata') WHERE json_type(new.doc, '$.metadata') = 'object'"
)
_SQLITE_V2: list[LiteralString] = [
    """CREATE TABLE IF NOT EXISTS plait_server_thread_meta (
        thread_id TEXT NOT NULL, key TEXT NOT NULL, type TEXT NOT NULL, value,
        PRIMARY KEY (thread_id, key)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS plait_server_thread_meta_kv ON plait_server_thread_meta (key, value, type)",
    f"""CREATE TRIGGER IF NOT EXISTS plait_server_thread_meta_ins AFTER INSERT ON plait_server_threads BEGIN
        INSERT OR REPLACE INTO plait_server_thread_meta SELECT new.thread_id, key, type, value {_META_JSON}; END""",
    f"""CREATE TRIGGER IF NOT EXISTS plait_server_thread_meta_upd AFTER UPDATE OF doc ON plait_server_threads
        WHEN json_extract(old.doc, '$.metadata') IS NOT json_extract(new.doc, '$.metadata') BEGIN
        DELETE FROM plait_server_thread_meta WHERE thread_id = old.thread_id;
        INSERT OR REPLACE INTO plait_server_thread_meta SELECT new.thread_id, key, type, value {_META_JSON}; END""",
    """CREATE TRIGGER IF NOT EXISTS plait_server_thread_meta_del AFTER DELETE ON plait_server_threads BEGIN
        DELETE FROM plait_server_thread_meta WHERE thread_id = old.thread_id; END""",
    """INSERT OR REPLACE INTO plait_server_thread_meta SELECT t.thread_id, m.key, m.type, m.value
        FROM plait_server_threads t, json_each(t.doc, '$.metadata') m
        WHERE json_type(t.doc, '$.metadata') = 'object'""",
]
# PostgreSQL: a GIN index on the metadata as jsonb (searches ask ``metadata @> filter``); written
# through (no fastupdate pending list, which every search would scan until the next vacuum)
_PG_V2: list[LiteralString] = [
    """CREATE INDEX IF NOT EXISTS plait_server_threads_metadata ON plait_server_threads
        USING gin (((doc::jsonb) -> 'metadata') jsonb_path_ops) WITH (fastupdate = off)""",
]
# version 4: assistants' and crons' searches filter, sort and page in SQL (each sort column indexed;
# on PostgreSQL in code point order, as the search sorts, and the metadata under a GIN index)
_SQLITE_V4: list[LiteralString] = [
    "CREATE INDEX IF NOT EXISTS plait_server_assistants_created ON plait_server_assistants (created_at)",
    "CREATE INDEX IF NOT EXISTS plait_server_assistants_updated ON plait_server_assistants (updated_at)",
    "CREATE INDEX IF NOT EXISTS plait_server_assistants_name ON plait_server_assistants (name)",
    "CREATE INDEX IF NOT EXISTS plait_server_assistants_graph ON plait_server_assistants (graph_id, created_at)",
    "CREATE INDEX IF NOT EXISTS plait_server_crons_created ON plait_server_crons (created_at)",
    "CREATE INDEX IF NOT EXISTS plait_server_crons_updated ON plait_server_crons (updated_at)",
]
_PG_V4: list[LiteralString] = [
    'CREATE INDEX IF NOT EXISTS plait_server_assistants_created ON plait_server_assistants (created_at COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS plait_server_assistants_updated ON plait_server_assistants (updated_at COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS plait_server_assistants_name ON plait_server_assistants (name COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS plait_server_assistants_id ON plait_server_assistants (assistant_id COLLATE "C")',
    """CREATE INDEX IF NOT EXISTS plait_server_assistants_graph ON plait_server_assistants
        (graph_id, created_at COLLATE "C")""",
    """CREATE INDEX IF NOT EXISTS plait_server_assistants_metadata ON plait_server_assistants
        USING gin (((doc::jsonb) -> 'metadata') jsonb_path_ops) WITH (fastupdate = off)""",
    'CREATE INDEX IF NOT EXISTS plait_server_crons_created ON plait_server_crons (created_at COLLATE "C")',
    'CREATE INDEX IF NOT EXISTS plait_server_crons_updated ON plait_server_crons (updated_at COLLATE "C")',
    """CREATE INDEX IF NOT EXISTS plait_server_crons_metadata ON plait_server_crons
        USING gin (((doc::jsonb) -> 'metadata') jsonb_path_ops) WITH (fastupdate = off)""",
]
_SQLITE_STEPS: list[list[LiteralString] | Callable[[sqlite3.Connection], None]] = [
    [],
    _SQLITE_V2,
    sqlite_move_store,
    _SQLITE_V4,
]
_PG_STEPS: list[list[LiteralString] | Callable[[Any], Awaitable[None]]] = [
    [],
    _PG_V2,
    pg_move_store,
    _PG_V4,
]
SCHEMA_VERSION = len(_SQLITE_STEPS)
"""The newest version of the server's tables this plait knows."""


def _checked(found: int | None, where: str) -> int:
    if found is not None and found > SCHEMA_VERSION:
        raise SchemaVersionError(found, SCHEMA_VERSION, where, kind="server")
    return found or 0


def _json_equal(stored: Any, wanted: str) -> bool:
    """A stored JSON object or array equals the wanted one (key order aside)."""
    return isinstance(stored, str) and bool(loads(stored) == loads(wanted))


def _json_subset(stored: str | None, wanted: str) -> bool:
    """Every top-level key of ``wanted`` has the same value in the stored JSON object."""
    want: dict[str, object] = loads(wanted)
    if stored is None:
        return not want
    loaded = loads(stored)
    if not isinstance(loaded, dict):
        return not want
    have = as_dict(loaded)
    return all(k in have and have[k] == v for k, v in want.items())


def _meta_holds(stored: str | None, wanted: str) -> bool:
    """The stored JSON object has each key of ``wanted`` with an equal value (a null one: absent or null)."""
    want: dict[str, object] = loads(wanted)
    loaded: object = loads(stored) if stored else None
    have = as_dict(loaded)
    return all(have.get(k) == v for k, v in want.items())


def _icontains(stored: str | None, part: str) -> bool:
    """``part`` is in ``stored``, letter case aside (as Python's ``str.lower`` folds it)."""
    return stored is not None and part.lower() in stored.lower()


def sqlite_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions searches use: ``plait_json_equal(stored, wanted)``, ``plait_json_subset(stored, wanted)``,
    ``plait_meta_holds(metadata, wanted)``, ``plait_icontains(text, part)`` and
    ``plait_auth_match(metadata, filter)`` (an auth handler's filter, see :mod:`plait.server._auth_filter`)."""
    conn.create_function("plait_meta_holds", 2, _meta_holds, deterministic=True)
    conn.create_function("plait_icontains", 2, _icontains, deterministic=True)
    conn.create_function("plait_json_equal", 2, _json_equal, deterministic=True)
    conn.create_function("plait_json_subset", 2, _json_subset, deterministic=True)
    conn.create_function("plait_auth_match", 2, auth_match, deterministic=True)


def sqlite_check(conn: sqlite3.Connection, where: str) -> int:
    """The stored version (0: none yet); :class:`SchemaVersionError` when newer than this plait."""
    conn.execute(_TABLE)
    row = conn.execute("SELECT max(version) FROM plait_server_schema").fetchone()
    return _checked(row[0], where)


def sqlite_migrate(conn: sqlite3.Connection, where: str) -> None:
    """Apply the steps past the stored version, in one write transaction (re-checked inside it)."""
    if sqlite_check(conn, where) == SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = sqlite_check(conn, where)
        for step in _SQLITE_STEPS[found:]:
            if callable(step):
                step(conn)
                continue
            for ddl in step:
                conn.execute(ddl)
        conn.execute("DELETE FROM plait_server_schema")
        conn.execute("INSERT INTO plait_server_schema (version) VALUES (?)", (SCHEMA_VERSION,))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


async def pg_check(conn: Any, where: str) -> int:
    """The stored version (0: none yet); :class:`SchemaVersionError` when newer (call under the set-up lock)."""
    await conn.execute(_TABLE)
    cur = await conn.execute("SELECT max(version) FROM plait_server_schema")
    row = await cur.fetchone()
    return _checked(None if row is None else row[0], where)


async def pg_migrate(conn: Any, found: int, where: str) -> None:
    """Apply the steps past ``found`` (from :func:`pg_check`, under the same set-up lock)."""
    if found == SCHEMA_VERSION:
        return
    async with conn.transaction():
        for step in _PG_STEPS[found:]:
            if callable(step):
                await step(conn)
                continue
            for ddl in step:
                await conn.execute(ddl)
        await conn.execute("DELETE FROM plait_server_schema")
        await conn.execute("INSERT INTO plait_server_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
