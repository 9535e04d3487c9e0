"""``mypy --strict plait`` and ``pyright`` (strict) pass (configuration: ``[tool.mypy]``, ``[tool.pyright]``)."""

from __future__ import annotations

import pathlib
import shutil
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


@pytest.mark.skipif(shutil.which("node") is None, reason="pyright runs on Node.js, which this machine lacks")
def test_pyright_strict_reports_no_error() -> None:
    pytest.importorskip("pyright", reason="pyright comes with the 'dev' extra")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--project",
            str(ROOT / "pyproject.toml"),
            "--pythonpath",
            sys.executable,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
