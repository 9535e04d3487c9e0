"""Two real processes writing and sweeping one store (SQLite file, PostgreSQL) lose nothing unexpired."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _pg import private_schema

WORKER = r"""
import sys, time
kind, target, name, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if kind == "sqlite":
    from plait.store.sqlite import SqliteStore as Store
    manager = Store.from_conn_string(target)
else:
    from plait.store.postgres import PostgresStore as Store
    manager = Store.from_conn_string(target)
from plait.store.base import PutOp
with manager as store:
    for r in range(rounds):
        ops = [PutOp(("keep", name), f"{r}-{i}", {"r": r, "i": i}, ttl=60) for i in range(20)]
        ops += [PutOp(("short", name), f"{r}-{i}", {"r": r}, ttl=0.2 / 60) for i in range(20)]
        store.batch(ops)
        store.get(("keep", name), f"{r}-0")
        store.sweep_ttl()
print("done")
"""


def _run(kind: str, target: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, kind, target, name, "25"], stdout=subprocess.PIPE, text=True
        )
        for name in ("a", "b")
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0 and out.strip() == "done"


def _check(store: Any) -> None:
    time.sleep(0.3)
    store.sweep_ttl()
    for name in ("a", "b"):
        kept = store.search(("keep", name), limit=1000)
        assert len(kept) == 25 * 20
        assert {h.key for h in kept} == {f"{r}-{i}" for r in range(25) for i in range(20)}
    assert store.search(("short",), limit=1000) == []


def test_two_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    from plait.store.sqlite import SqliteStore

    path = tmp_path / "shared.db"
    with SqliteStore.from_conn_string(path) as store:
        store.setup()
    _run("sqlite", str(path))
    with SqliteStore.from_conn_string(path) as store:
        _check(store)


def test_two_processes_on_one_postgres_schema() -> None:
    from plait.store.postgres import PostgresStore

    with private_schema("plait_2p") as dsn:
        with PostgresStore.from_conn_string(dsn) as store:
            store.setup()
        _run("postgres", dsn)
        with PostgresStore.from_conn_string(dsn) as store:
            _check(store)
