"""Fixtures for the multi-process tests: a shared SQLite file or a private PostgreSQL schema."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _procs import PG_DSN, pg_schema_dsn, skip_without_pg


@pytest.fixture
def pg_target() -> Iterator[str]:
    """``postgres:<dsn>`` on a fresh schema, dropped afterwards."""
    skip_without_pg()
    import psycopg

    schema = f"plait_p_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield "postgres:" + pg_schema_dsn(schema)
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database several processes can share: ``sqlite:<file>`` or ``postgres:<dsn>``."""
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'shared.db'}"
    return request.getfixturevalue("pg_target")
