"""Run every examples/memory_*.py as a subprocess and check what it prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("memory_*.py"))

EXPECTED = {
    "memory_view.py": [
        "turn 0: saw 2: ['system', 'human']",
        "turn 3: saw 4: ['system', 'human', 'ai', 'human']",
        "stored messages: 9",
    ],
    "memory_trim.py": [
        "by count: 6 messages",
        "  [0] human | 第0轮对话随便聊",
        "  [4] human | 第5轮对话随便聊",
        "by tokens: 10 messages, ~100 tokens",
    ],
    "memory_delete.py": [
        "after deleting a1: ['h1', 'h2', 'a2', 't1', 'a3']",
        "naive slice problems: [\"ToolMessage #0 (id='t1') answers tool call 'call-1', "
        'which no earlier AIMessage requested"]',
        "keep_last(2) kept: ['a3'] problems: []",
        "after clearing: []",
    ],
    "memory_summarize.py": [
        "round 4: 10 messages, ~95 tokens, types=['human', 'ai', 'human', 'ai', 'human', 'ai', 'human', 'ai', 'human', 'ai']",
        "round 5: 6 messages, ~71 tokens, types=['system', 'ai', 'human', 'ai', 'human', 'ai']",
        "  [0] system | Summary of the conversation so far: summary #3 (+4 messages)",
        "summary text: summary #3 (+4 messages)",
    ],
}


def test_every_example_has_expectations() -> None:
    assert {path.name for path in EXAMPLES} == set(EXPECTED)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_prints_expected_lines(path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for expected in EXPECTED[path.name]:
        assert expected in lines, f"{expected!r} not in output:\n{proc.stdout}"
