"""Fixtures of the runtime tests."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver


@pytest.fixture(params=["memory", "sqlite"])
def any_saver(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Any]:
    """An ``InMemorySaver``, or a ``SqliteSaver`` on a file."""
    if request.param == "memory":
        yield InMemorySaver()
        return
    with SqliteSaver.from_conn_string(str(tmp_path / "threads.db")) as saver:
        yield saver
