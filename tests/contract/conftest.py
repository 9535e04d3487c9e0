"""The ``saver`` fixture of the contract suites: in-memory, SQLite and PostgreSQL (a private schema)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver

PG_DSN = os.environ.get("PLAIT_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def _pg_available() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_DSN, connect_timeout=3):
            return None
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
        return f"PostgreSQL not reachable at {PG_DSN} ({type(exc).__name__}); set PLAIT_PG_DSN"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    kind = request.param
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        with SqliteSaver.from_conn_string(tmp_path / "cp.db") as s:
            yield s
    else:
        reason = _pg_available()
        if reason is not None:
            if os.environ.get("PLAIT_REQUIRE_PG"):
                pytest.fail(reason + " and PLAIT_REQUIRE_PG is set")
            pytest.skip(reason)
        yield from _pg_saver()


def _pg_saver() -> Iterator[Any]:
    import psycopg

    from plait.checkpoint.postgres import PostgresSaver

    schema = f"plait_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            dsn = f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}options=-csearch_path%3D{schema}"
            with PostgresSaver.from_conn_string(dsn, pool_size=2) as s:
                yield s
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
