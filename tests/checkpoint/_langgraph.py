"""LangGraph 1.2.24 itself, in its own interpreter (/tmp/lgref), writing and reading databases for tests."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

LGREF = Path(os.environ.get("PLAIT_LGREF", "/tmp/lgref")) / "bin" / "python"
WRITER = Path(__file__).with_name("_langgraph_writer.py")


def require_langgraph() -> None:
    """Skip unless LangGraph's reference interpreter exists (``.ci/run`` creates it)."""
    if not LGREF.exists():
        pytest.skip(
            f"LangGraph 1.2.24 is not installed at {LGREF.parent.parent} (create it with: python3 -m venv /tmp/lgref "
            "&& /tmp/lgref/bin/pip install langgraph==1.2.24 langgraph-checkpoint-sqlite "
            "langgraph-checkpoint-postgres 'psycopg[binary]' psycopg-pool)"
        )


def langgraph(mode: str, backend: str, target: str) -> dict[str, Any]:
    """Run the writer (``write`` or ``check``) with LangGraph on ``target``; its summary of every thread."""
    require_langgraph()
    done = subprocess.run(
        [str(LGREF), str(WRITER), mode, backend, target],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary
