"""Fixtures of the contract suites: ``saver`` (in-memory, SQLite, PostgreSQL in a private schema), and the
store suites' ``kind`` and ``mode`` (each backend, sync and async)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _pg import pg_saver

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    kind = request.param
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        with SqliteSaver.from_conn_string(tmp_path / "cp.db") as s:
            yield s
    else:
        yield from pg_saver()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    """A store backend."""
    return str(request.param)


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    """How the store is called."""
    return str(request.param)
