"""The README's example runs as written, and its two commands are the ones CI uses."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_python_example_runs_and_persists(tmp_path: Path) -> None:
    code = re.search(r"```python\n(.*?)```", README, re.S)
    assert code, "README has a python example"
    script = tmp_path / "example.py"
    script.write_text(code.group(1), encoding="utf-8")
    first = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    second = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert first.stdout.split() == ["2", "4"]
    assert second.stdout.split() == ["4", "8"], "the thread continues from the SQLite file"


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"^    (python3 -m venv .*)$", README, re.M)
    assert len(commands) == 2, commands
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
