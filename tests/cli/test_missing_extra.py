"""``plait`` without the ``cli`` extra: one line naming the extra, exit status 1, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_extra(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import click`` and ``import rich`` fail as if they were not installed."""
    for name in ("click", "rich"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n"
        )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _plait(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from plait.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.parametrize("args", [["demo"], ["threads", "x.sqlite"], [], ["--help"]])
def test_commands_name_the_extra_to_install(no_extra: dict[str, str], args: list[str]) -> None:
    proc = _plait(no_extra, *args)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'plait[cli]'" in lines[0], proc.stderr
    assert proc.stdout == ""


def test_version_needs_no_extra(no_extra: dict[str, str]) -> None:
    proc = _plait(no_extra, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("plait, version ") and proc.stderr == ""


def test_stubs_really_hide_the_extra(no_extra: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import click"], capture_output=True, text=True, env=no_extra
    )
    assert proc.returncode == 1 and "No module named 'click'" in proc.stderr


def test_library_imports_without_the_extra(no_extra: dict[str, str]) -> None:
    code = "import plait.cli, plait.graph, plait.checkpoint.sqlite; print(type(plait.cli.main).__name__)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=no_extra, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "MissingExtra"
