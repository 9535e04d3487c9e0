"""The project's linter and formatter pass on the code and the tests (configuration in pyproject.toml)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("ruff", reason="ruff comes with the 'dev' extra")

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "plait", "tests", "bench", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
