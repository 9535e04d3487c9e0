"""A fakellm server for the agent tests (one per module; rules are set per test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakellm_server import FakeLLM, start_fakellm


@pytest.fixture(scope="module")
def fakellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeLLM]:
    """A running fakellm; call ``fakellm.rules([...])`` to program it."""
    server = start_fakellm(Path(tmp_path_factory.mktemp("fakellm")))
    yield server
    server.stop()
