"""Runs the seed-conformance suite (``../shared/conformance``) against plait, when present."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[1].parent / "shared" / "conformance" / "run.py"


@pytest.mark.skipif(not RUNNER.exists(), reason=f"conformance suite not found at {RUNNER}")
def test_seed_conformance_suite_passes() -> None:
    env = dict(os.environ)
    env.setdefault("PLAIT_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--impl", "plait", "-j", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = [ln for ln in proc.stdout.splitlines() if re.match(r"^\d+ passed, \d+ failed", ln)]
    failures = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAIL")]
    assert summary, proc.stdout + proc.stderr
    assert not failures and proc.returncode == 0, "\n".join(failures)
