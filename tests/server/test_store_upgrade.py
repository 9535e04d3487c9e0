"""A server database whose store is in the old server tables (``plait_server_store``, as plait wrote
them up to schema version 2) keeps every item, its times, expiry and vectors: schema step 3 moves
them into ``plait.store``'s tables once, and the server's store answers from there."""

from __future__ import annotations

import array
import asyncio
import json
import pathlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import datetime
from typing import Any

import psycopg
import pytest
from _pg import private_schema
from _serve_proc import APP, Server, running
from langgraph_sdk import get_sync_client

from plait.server._db import SqliteDatabase
from plait.server._schema import SCHEMA_VERSION
from plait.server._store import close_store, open_store

# the store tables as the server made them until schema version 2 (BYTEA is a BLOB to SQLite)
_OLD = [
    """CREATE TABLE plait_server_store (
        prefix TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at DOUBLE PRECISION,
        PRIMARY KEY (prefix, key))""",
    """CREATE TABLE plait_server_store_vectors (
        prefix TEXT NOT NULL, key TEXT NOT NULL, field TEXT NOT NULL, vector BYTEA NOT NULL,
        PRIMARY KEY (prefix, key, field))""",
    "ALTER TABLE plait_server_store ADD COLUMN ttl_minutes DOUBLE PRECISION",
]
EMBED = '''
def embed(texts):
    """Counts of three words (and the length): a deterministic embedding to rank by."""
    return [[t.count("cat") + 0.1, t.count("dog") + 0.1, t.count("fish") + 0.1, len(t) / 100] for t in texts]
'''
NOW = time.time()
FUTURE = NOW + 86_400
# (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes), in the order they were written
ITEMS: list[tuple[Any, ...]] = [
    (
        "mem.u1",
        "a",
        {"text": "dog"},
        "2026-01-01T00:00:00.000001+00:00",
        "2026-03-01T00:00:00+00:00",
        None,
        None,
    ),
    ("mem.u2", "b", {"text": "fish"}, "2026-01-02T00:00:00+00:00", "2026-01-02T00:00:00+00:00", None, None),
    (
        "mem.u1",
        "c",
        {"text": "cat"},
        "2026-01-03T00:00:00+00:00",
        "2026-01-03T00:00:00+00:00",
        FUTURE,
        1440.0,
    ),
    (
        "mem.u1",
        "gone",
        {"text": "x"},
        "2026-01-04T00:00:00+00:00",
        "2026-01-04T00:00:00+00:00",
        NOW - 60,
        1.0,
    ),
]
CAT = [1.1, 0.1, 0.1, 0.03]
"""What ``embed`` gives for "cat": stored as item ``a``'s vector although its text is "dog", so a
search that ranks ``a`` first for "cat" ranks by the vector moved, not by one embedded anew."""


def _blob(vector: list[float]) -> bytes:
    return array.array("f", vector).tobytes()


def _vectors() -> list[tuple[str, str, str, bytes]]:
    return [
        ("mem.u1", "a", "text", _blob(CAT)),
        ("mem.u2", "b", "text", _blob([0.1, 0.1, 1.1, 0.04])),
        ("mem.u1", "c", "other", _blob([1.0, 2.0])),  # an earlier embedder's length: left out
        ("nowhere", "z", "text", _blob(CAT)),  # no item: left out
    ]


def _rows(p: str) -> tuple[str, str]:
    return (
        f"INSERT INTO plait_server_store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) "
        f"VALUES ({', '.join([p] * 7)})",
        f"INSERT INTO plait_server_store_vectors (prefix, key, field, vector) VALUES ({p}, {p}, {p}, {p})",
    )


def _write_sqlite(path: pathlib.Path) -> None:
    items, vectors = _rows("?")
    with closing(sqlite3.connect(path)) as conn, conn:
        for ddl in _OLD:
            conn.execute(ddl)
        conn.executemany(items, [(*row[:2], json.dumps(row[2]), *row[3:]) for row in ITEMS])
        conn.executemany(vectors, _vectors())


def _write_pg(dsn: str) -> None:
    items, vectors = _rows("%s")
    with psycopg.connect(dsn, autocommit=True) as conn:
        for ddl in _OLD:
            conn.execute(ddl)
        with conn.cursor() as cur:
            cur.executemany(items, [(*row[:2], json.dumps(row[2]), *row[3:]) for row in ITEMS])
            cur.executemany(vectors, _vectors())


@contextmanager
def _old_server(kind: str, tmp: pathlib.Path) -> Iterator[tuple[Server, Callable[[str], list[Any]]]]:
    """A server started on a database the old layout wrote, and a query of that database."""
    (tmp / "embed.py").write_text(EMBED)
    config = tmp / "plait.json"
    index = {"embed": "./embed.py:embed", "dims": 4, "fields": ["text"]}
    config.write_text(
        json.dumps({"graphs": {"agent": f"{APP / 'agent.py'}:graph"}, "store": {"index": index}})
    )
    if kind == "sqlite":
        _write_sqlite(tmp / "db.server.sqlite")

        def query(sql: str) -> list[Any]:
            with closing(sqlite3.connect(tmp / "db.server.sqlite")) as conn:
                return [tuple(r) for r in conn.execute(sql)]

        with running(str(tmp / "db.sqlite"), tmp, "--config", str(config)) as server:
            yield server, query
        return
    with private_schema("plait_up") as dsn:
        _write_pg(dsn)

        def pg_query(sql: str) -> list[Any]:
            with psycopg.connect(dsn) as conn:
                return [tuple(r) for r in conn.execute(sql).fetchall()]  # type: ignore[arg-type]

        with running(dsn, tmp, "--config", str(config)) as server:
            yield server, pg_query


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_old_store_rows_move_once_into_the_store_tables(kind: str, tmp_path: pathlib.Path) -> None:
    with _old_server(kind, tmp_path) as (server, query):
        client = get_sync_client(url=server.url)
        (expires, minutes), *_ = query("SELECT expires_at, ttl_minutes FROM plait_store WHERE key = 'c'")
        when = expires if isinstance(expires, float) else expires.timestamp()
        assert abs(when - FUTURE) < 1e-3 and minutes == 1440.0  # (before a read restarts its clock)
        a = client.store.get_item(["mem", "u1"], "a")
        assert a is not None and a["value"] == {"text": "dog"}
        assert datetime.fromisoformat(a["created_at"]) == datetime.fromisoformat(ITEMS[0][3])
        assert datetime.fromisoformat(a["updated_at"]) == datetime.fromisoformat(ITEMS[0][4])
        assert client.store.get_item(["mem", "u1"], "gone") is None  # expired before the move
        # the written order of the old rows: namespaces by their oldest item, then items as written
        assert [i["key"] for i in client.store.search_items(["mem"])["items"]] == ["a", "c", "b"]
        ranked = client.store.search_items(["mem"], query="cat")["items"]
        assert [i["key"] for i in ranked] == ["a", "b", "c"] and round(ranked[0]["score"], 4) == 1.0
        assert ranked[2]["score"] is None  # c's only vector was left out (another length)
        assert sorted(query("SELECT key, field FROM plait_store_vectors")) == [("a", "text"), ("b", "text")]
        assert query("SELECT version FROM plait_server_schema") == [(SCHEMA_VERSION,)]
        tables = "SELECT count(*) FROM {} WHERE {} LIKE 'plait_server_store%'"
        if kind == "sqlite":
            assert query(tables.format("sqlite_master", "name")) == [(0,)]
        else:
            assert query(tables.format("information_schema.tables", "table_name")) == [(0,)]
        client.store.put_item(["mem", "u1"], "d", {"text": "cat fish"})  # a new item: embedded, after
        assert [i["key"] for i in client.store.search_items(["mem", "u1"])["items"]] == ["a", "c", "d"]


def test_a_version_2_sqlite_database_moves_its_store_at_the_next_start(tmp_path: pathlib.Path) -> None:
    """A database at version 2 (the last layout with the old tables) runs step 3 alone."""
    path = tmp_path / "v2.server.sqlite"

    async def check() -> None:
        db = SqliteDatabase(str(path))
        store = await open_store(db, None, None)
        try:
            item = await store.aget(("mem", "u2"), "b")
            assert item is not None and item.value == {"text": "fish"}
            assert [i.key for i in await store.asearch(("mem",))] == ["a", "c", "b"]
        finally:
            await close_store(store)
            await db.close()

    asyncio.run(_at_version_2(path))
    asyncio.run(check())
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT version FROM plait_server_schema").fetchall() == [(SCHEMA_VERSION,)]


async def _at_version_2(path: pathlib.Path) -> None:
    """The server's tables as a version 2 server left them: old store tables, version row 2."""
    await SqliteDatabase(str(path)).close()  # every table of today's layout
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DROP TABLE plait_store_vectors")
        conn.execute("DROP TABLE plait_store")
        conn.execute("UPDATE plait_server_schema SET version = 2")
    _write_sqlite(path)
