"""The ``saver`` fixture of the contract suites: in-memory, SQLite and PostgreSQL (a private schema)."""

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
