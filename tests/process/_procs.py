"""Helpers for the multi-process tests: database targets, child processes, skips."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PG_DSN = os.environ.get("PLAIT_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
CHILD = Path(__file__).with_name("_child.py")
ROOT = Path(__file__).resolve().parents[2]


def pg_unreachable() -> str | None:
    """Why PostgreSQL cannot be used, or ``None``."""
    try:
        import psycopg

        with psycopg.connect(PG_DSN, connect_timeout=3):
            return None
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
        return f"PostgreSQL not reachable at {PG_DSN} ({type(exc).__name__}); set PLAIT_PG_DSN"


def skip_without_pg() -> None:
    """Skip (or fail, when ``PLAIT_REQUIRE_PG`` is set) if PostgreSQL is unreachable."""
    reason = pg_unreachable()
    if reason is not None:
        if os.environ.get("PLAIT_REQUIRE_PG"):
            pytest.fail(reason + " and PLAIT_REQUIRE_PG is set")
        pytest.skip(reason)


def pg_schema_dsn(schema: str) -> str:
    """``PG_DSN`` with ``search_path`` set to ``schema``."""
    return f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}options=-csearch_path%3D{schema}"


def spawn(target: str, *args: str, ttl: float | None = None) -> subprocess.Popen[str]:
    """Start ``_child.py target args...`` with piped text stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if ttl is not None:
        env["LEASE_TTL"] = str(ttl)
    return subprocess.Popen(
        [sys.executable, str(CHILD), target, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=str(ROOT),
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    """Wait for ``proc``; return ``(returncode, stdout, stderr)``."""
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def open_saver(target: str, ttl: float = 30.0) -> Any:
    """The parent's own saver on ``target`` (a context manager)."""
    return child_module().open_saver(target, ttl)


def child_module() -> Any:
    """``_child.py`` imported as a module (graph builders shared with the children)."""
    spec = importlib.util.spec_from_file_location("plait_process_child", CHILD)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module
