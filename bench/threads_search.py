"""``/threads/search`` and ``/threads/count`` with a metadata filter over many threads, on SQLite and PostgreSQL.

    .venv/bin/python bench/threads_search.py [--n 100000] [--queries 200] [--dsn postgresql://...]

Fills the server's threads table (through ``plait.server._db``, so the triggers and indexes of
the current schema are in place) with ``--n`` threads, of which 100 carry ``{"team": "target"}``;
the rest have 1000 other teams. Times, per database and at ``n/10`` then ``n`` threads (the same
100 matches: a cost that does not grow with non-matching threads stays flat), the calls the
handlers make (:func:`find_threads`: first page of 10, newest first, with the total;
:func:`count_threads`), median of ``--queries`` each. PostgreSQL runs in a private schema,
dropped afterwards. Prints a line per measure, then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from plait.server._db import Database, PostgresDatabase, SqliteDatabase  # noqa: E402
from plait.server._thread_models import ThreadSearchRequest  # noqa: E402
from plait.server._threads import count_threads, find_threads  # noqa: E402

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
MATCHES = 100
QUERY = ThreadSearchRequest(metadata={"team": "target"}, limit=10)
_INSERT = (
    "INSERT INTO plait_server_threads (thread_id, status, created_at, updated_at, doc) VALUES (?, ?, ?, ?, ?)"
)


def _rows(start: int, stop: int, total: int) -> list[tuple[str, str, str, str, str]]:
    """Threads ``start..stop``; every ``total // MATCHES``-th is on the target team."""
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    step = total // MATCHES
    out = []
    for i in range(start, stop):
        at = (base + timedelta(seconds=i)).isoformat()
        team = "target" if i % step == step // 2 else f"t{i % 1000}"
        tid = str(uuid.UUID(int=i + 1))
        meta = {"team": team, "user": f"u{i}", "source": "bench"}
        doc = {"thread_id": tid, "created_at": at, "updated_at": at, "state_updated_at": at}
        doc |= {"metadata": meta, "status": "idle", "config": {}}
        out.append((tid, "idle", at, at, json.dumps(doc)))
    return out


async def _fill(db: Database, start: int, stop: int, total: int) -> None:
    for lo in range(start, stop, 5000):
        batch = _rows(lo, min(stop, lo + 5000), total)
        if isinstance(db, SqliteDatabase):
            db.conn.execute("BEGIN")
            db.conn.executemany(_INSERT, batch)
            db.conn.execute("COMMIT")
        else:
            async with db.pool.connection() as conn, conn.cursor() as cur:  # type: ignore[attr-defined]
                await cur.executemany(_INSERT.replace("?", "%s"), batch)
    if isinstance(db, PostgresDatabase):
        await db.run("ANALYZE plait_server_threads")
    else:
        db.conn.execute("ANALYZE")  # type: ignore[attr-defined]


async def _time(db: Database, queries: int) -> dict[str, float]:
    rows, total = await find_threads(db, QUERY)
    assert total == MATCHES and len(rows) == 10, (total, len(rows))
    assert await count_threads(db, QUERY) == MATCHES
    search, count = [], []
    for _ in range(queries):
        t0 = time.perf_counter()
        await find_threads(db, QUERY)
        t1 = time.perf_counter()
        await count_threads(db, QUERY)
        count.append(time.perf_counter() - t1)
        search.append(t1 - t0)
    return {"search_ms": statistics.median(search) * 1e3, "count_ms": statistics.median(count) * 1e3}


async def _sqlite(n: int, queries: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in (n // 10, n):
            db = SqliteDatabase(str(Path(tmp) / f"server{size}.sqlite"))
            try:
                await _fill(db, 0, size, size)
                out[str(size)] = await _time(db, queries)
            finally:
                await db.close()
    return out


async def _postgres(dsn: str, n: int, queries: int) -> dict[str, Any]:
    import psycopg

    out: dict[str, Any] = {}
    for size in (n // 10, n):
        schema = f"bench_threads_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
            try:
                db = await PostgresDatabase.open(
                    f"{dsn}{'&' if '?' in dsn else '?'}options=-csearch_path%3D{schema}"
                )
                try:
                    await _fill(db, 0, size, size)
                    out[str(size)] = await _time(db, queries)
                finally:
                    await db.close()
            finally:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dsn", default=PG_DSN)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    report: dict[str, Any] = {"threads": args.n, "matches": MATCHES, "queries": args.queries}
    report["sqlite"] = asyncio.run(_sqlite(args.n, args.queries))
    if not args.no_postgres:
        report["postgres"] = asyncio.run(_postgres(args.dsn, args.n, args.queries))
    for backend in ("sqlite", "postgres"):
        for size, times in report.get(backend, {}).items():
            print(
                f"{backend} {size:>7} threads: search {times['search_ms']:.2f} ms, count {times['count_ms']:.2f} ms"
            )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
