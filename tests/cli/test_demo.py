"""`plait demo`: the seed-000 customer-service graph on a durable SQLite thread."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from plait.cli import main


def _turns(output: str) -> list[tuple[int, int]]:
    return [(int(t), int(m)) for t, m in re.findall(r"turn=(\d+) .* messages=(\d+)", output)]


def test_demo_runs_four_turns_with_trimming_and_slots() -> None:
    result = CliRunner().invoke(main, ["demo", "--db", ":memory:"])
    assert result.exit_code == 0, result.output
    assert _turns(result.output) == [(1, 2), (2, 4), (3, 6), (4, 6)]
    assert "topics=['售后', '物流', '设备']" in result.output


def test_demo_thread_survives_a_new_process(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.sqlite")
    cmd = [sys.executable, "-c", "from plait.cli import main; main()", "demo", "--db", db]
    first = subprocess.run(cmd, capture_output=True, text=True, check=True)
    second = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert _turns(first.stdout)[-1] == (4, 6)
    assert _turns(second.stdout) == [(5, 6), (6, 6), (7, 6), (8, 6)], (
        "the second process continues the thread"
    )
    assert "40 checkpoints" in second.stdout
