"""The fakellm server fixture, shared with tests/agents."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agents"))

from fakellm_server import FakeLLM, start_fakellm  # noqa: E402 - found through the line above


@pytest.fixture(scope="module")
def fakellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeLLM]:
    """A running fakellm; call ``fakellm.rules([...])`` to program it."""
    server = start_fakellm(Path(tmp_path_factory.mktemp("fakellm")))
    yield server
    server.stop()
