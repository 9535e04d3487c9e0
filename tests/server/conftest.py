"""A ``plait serve`` process on a SQLite file, shared by the tests of a module."""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator

import pytest
from _serve_proc import Gate, Server, running, running_on


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve")
    log = tmp / "nodes.log"
    with running(str(tmp / "server.sqlite"), tmp, env={"PLAIT_TEST_LOG": str(log)}) as srv:
        yield srv


@pytest.fixture
def tmp(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server_on_both(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A ``plait serve`` on each database (PostgreSQL: the multi-worker code path, one worker);
    nodes of the test app log to ``nodes.log`` beside the server's log."""
    tmp: pathlib.Path = tmp_path_factory.mktemp("serve")
    with running_on(request.param, tmp, env={"PLAIT_TEST_LOG": str(tmp / "nodes.log")}) as srv:
        yield srv


@pytest.fixture
def gates(tmp_path: pathlib.Path) -> Iterator[Callable[[], Gate]]:
    """Makes gates (:class:`_serve_proc.Gate`); every one is opened as the test ends, so no node
    of a cancelled run is left waiting in the server."""
    made: list[Gate] = []

    def make() -> Gate:
        made.append(Gate(tmp_path / f"gate{len(made)}"))
        return made[-1]

    yield make
    for gate in made:
        gate.open()
