"""PostgreSQL for tests: the server from ``PLAIT_PG_DSN`` and private schemas on it, dropped afterwards."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

PG_DSN = os.environ.get("PLAIT_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def require_pg() -> None:
    """Skip the test when PostgreSQL is unreachable (fail instead when ``PLAIT_REQUIRE_PG`` is set)."""
    try:
        import psycopg

        psycopg.connect(PG_DSN, connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
        reason = f"PostgreSQL not reachable at {PG_DSN} ({type(exc).__name__}); set PLAIT_PG_DSN"
        if os.environ.get("PLAIT_REQUIRE_PG"):
            pytest.fail(reason + " and PLAIT_REQUIRE_PG is set")
        pytest.skip(reason)


@contextmanager
def private_schema(prefix: str = "plait_t") -> Iterator[str]:
    """A DSN whose ``search_path`` is a new schema; the schema is dropped on exit."""
    require_pg()
    import psycopg

    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}options=-csearch_path%3D{schema}"
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def pg_saver(prefix: str = "plait_t") -> Iterator[Any]:
    """A ``PostgresSaver`` on a private schema (for ``yield from`` in fixtures)."""
    from plait.checkpoint.postgres import PostgresSaver

    with private_schema(prefix) as dsn, PostgresSaver.from_conn_string(dsn, pool_size=2) as saver:
        yield saver


# the sessions waiting for the test's session, directly or behind one that does
_BLOCKED = """WITH RECURSIVE w(pid) AS (
  SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))
  UNION SELECT a.pid FROM pg_stat_activity a JOIN w ON w.pid = ANY(pg_blocking_pids(a.pid)))
SELECT count(*) FROM w"""


def lock_rows(conn: Any, sql: str, params: tuple[Any, ...]) -> int:
    """Lock the rows ``sql`` selects (``... FOR UPDATE``) in ``conn``'s open transaction; return the
    session's backend pid, which :func:`wait_blocked` takes."""
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    conn.execute(sql, params)
    return int(row[0])


def wait_blocked(conn: Any, holder: int, count: int) -> None:
    """Poll until ``count`` sessions wait (directly or not) for the lock ``holder``'s session holds."""
    import psycopg

    deadline = time.monotonic() + 120  # only so a broken server fails the test
    while True:
        with psycopg.connect(conn.info.dsn, autocommit=True) as probe:
            row = probe.execute(_BLOCKED, (holder,)).fetchone()
        if row is not None and row[0] >= count:
            return
        assert time.monotonic() < deadline, f"never {count} sessions waiting for the test's lock"
        time.sleep(0.02)
