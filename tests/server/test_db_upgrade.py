"""Server tables written by an earlier plait keep their threads: values move to their own column."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sqlite3

import pytest
from _pg import private_schema

from plait.errors import SchemaVersionError
from plait.server._data.thread_search import where_sql
from plait.server._db import PostgresDatabase, SqliteDatabase
from plait.server._schema import SCHEMA_VERSION
from plait.server._threads import get_thread, write_thread

# the threads table as plait 0.x made it: the values inside the document
_OLD_THREADS = """CREATE TABLE plait_server_threads (
    thread_id TEXT PRIMARY KEY, status TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, doc TEXT NOT NULL)"""
_ROW = (
    "t1",
    "idle",
    "2026-01-01T00:00:00+00:00",
    "2026-01-01T00:00:00+00:00",
    json.dumps({"thread_id": "t1", "metadata": {"a": 1}, "values": {"messages": ["hi"]}, "interrupts": {}}),
)


def test_sqlite_old_threads_keep_their_values(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "old.server.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(_OLD_THREADS)
        conn.execute("INSERT INTO plait_server_threads VALUES (?, ?, ?, ?, ?)", _ROW)
    db = SqliteDatabase(str(path))
    try:
        doc = asyncio.run(get_thread(db, "t1"))
        assert doc is not None
        assert doc["values"] == {"messages": ["hi"]} and doc["metadata"] == {"a": 1}
        stored = json.loads(db.conn.execute("SELECT doc FROM plait_server_threads").fetchone()[0])
        assert "values" not in stored  # moved, not copied
        doc["values"] = {"messages": ["hi", "there"]}
        asyncio.run(write_thread(db, doc))
        again = asyncio.run(get_thread(db, "t1"))
        assert again is not None and again["values"] == {"messages": ["hi", "there"]}
    finally:
        asyncio.run(db.close())
    reopened = SqliteDatabase(str(path))  # a second start finds the column and changes nothing
    try:
        doc = asyncio.run(get_thread(reopened, "t1"))
        assert doc is not None and doc["values"] == {"messages": ["hi", "there"]}
    finally:
        asyncio.run(reopened.close())


def test_postgres_old_threads_keep_their_values() -> None:
    import psycopg

    with private_schema() as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(_OLD_THREADS)
            conn.execute("INSERT INTO plait_server_threads VALUES (%s, %s, %s, %s, %s)", _ROW)

        async def check() -> None:
            db = await PostgresDatabase.open(dsn, size=2)
            try:
                doc = await get_thread(db, "t1")
                assert doc is not None and doc["values"] == {"messages": ["hi"]}
                rows = await db.fetch("SELECT doc FROM plait_server_threads")
                assert "values" not in json.loads(rows[0]["doc"])
            finally:
                await db.close()

        asyncio.run(check())


def _found(db: SqliteDatabase, metadata: dict[str, object]) -> list[str]:
    where, params = where_sql(db.dialect, metadata, {}, None, None)
    rows = asyncio.run(db.fetch(f"SELECT thread_id FROM plait_server_threads{where}", params))
    return [row["thread_id"] for row in rows]


def test_sqlite_old_database_gets_the_metadata_index(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "old.server.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(_OLD_THREADS)
        conn.execute("INSERT INTO plait_server_threads VALUES (?, ?, ?, ?, ?)", _ROW)
    db = SqliteDatabase(str(path))
    try:
        assert [tuple(r) for r in db.conn.execute("SELECT version FROM plait_server_schema")] == [
            (SCHEMA_VERSION,)
        ]
        assert [tuple(r) for r in db.conn.execute("SELECT * FROM plait_server_thread_meta")] == [
            ("t1", "a", "integer", 1)
        ]
        assert _found(db, {"a": 1}) == ["t1"] and _found(db, {"a": 2}) == []
        plan = " ".join(
            str(r[-1])
            for r in db.conn.execute(
                "EXPLAIN QUERY PLAN SELECT thread_id FROM "
                "plait_server_thread_meta WHERE key = 'a' AND value = 1"
            )
        )
        assert "plait_server_thread_meta_kv" in plan
        indexes = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"plait_server_assistants_created", "plait_server_assistants_graph"} <= indexes  # version 4
        assert {"plait_server_crons_created", "plait_server_crons_updated"} <= indexes
    finally:
        asyncio.run(db.close())


def test_sqlite_newer_schema_is_refused_untouched(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "new.server.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(_OLD_THREADS)
        conn.execute("CREATE TABLE plait_server_schema (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO plait_server_schema VALUES (?)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaVersionError, match=f"server schema version {SCHEMA_VERSION + 1}"):
        SqliteDatabase(str(path))
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == {"plait_server_threads", "plait_server_schema"}


def test_postgres_old_database_gets_the_metadata_index_and_newer_is_refused() -> None:
    import psycopg

    with private_schema() as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(_OLD_THREADS)
            conn.execute("INSERT INTO plait_server_threads VALUES (%s, %s, %s, %s, %s)", _ROW)

        async def check() -> None:
            db = await PostgresDatabase.open(dsn, size=2)
            try:
                assert await db.fetch("SELECT version FROM plait_server_schema") == [
                    {"version": SCHEMA_VERSION}
                ]
                index = await db.fetch(
                    "SELECT to_regclass('plait_server_threads_metadata') IS NOT NULL AS ok"
                )
                assert index == [{"ok": True}]
                for name in ("plait_server_assistants_metadata", "plait_server_crons_metadata"):  # version 4
                    found = await db.fetch(f"SELECT to_regclass('{name}') IS NOT NULL AS ok")
                    assert found == [{"ok": True}]
                for metadata, ids in (({"a": 1}, ["t1"]), ({"a": 2}, [])):
                    where, params = where_sql(db.dialect, metadata, {}, None, None)
                    rows = await db.fetch(f"SELECT thread_id FROM plait_server_threads{where}", params)
                    assert [row["thread_id"] for row in rows] == ids
            finally:
                await db.close()

        asyncio.run(check())
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("UPDATE plait_server_schema SET version = %s", (SCHEMA_VERSION + 1,))
        with pytest.raises(SchemaVersionError, match="newer than this plait supports"):
            asyncio.run(PostgresDatabase.open(dsn, size=2))
