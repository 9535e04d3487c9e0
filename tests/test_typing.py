"""``mypy --strict plait`` passes (configuration: ``[tool.mypy]`` in pyproject.toml)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mypy", reason="mypy comes with the 'dev' extra")
for _needed in ("click", "rich", "psycopg", "psycopg_pool"):  # type-checking reads the optional extras too
    pytest.importorskip(_needed, reason="type-checking plait needs the 'cli' and 'postgres' extras installed")

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_mypy_strict_reports_no_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "plait"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
