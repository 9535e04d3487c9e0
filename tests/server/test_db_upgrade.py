"""Server tables written by an earlier plait keep their threads: values move to their own column."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sqlite3

from _pg import private_schema

from plait.server._db import PostgresDatabase, SqliteDatabase
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
