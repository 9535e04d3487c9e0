"""A PostgreSQL server restart between two turns: the next turn succeeds on the same saver and pool.

Restarts the local cluster with ``pg_ctlcluster``, so it only runs as root on a
machine that has it; it always waits until the server accepts connections again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
from _procs import PG_DSN, child_module, open_saver
from langchain_core.messages import HumanMessage

CLUSTER = os.environ.get("PLAIT_PG_CLUSTER", "15 main").split()

pytestmark = pytest.mark.skipif(
    not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("pg_ctlcluster")),
    reason="restarting PostgreSQL needs root and pg_ctlcluster (cluster from PLAIT_PG_CLUSTER, default '15 main')",
)


def _wait_until_up(timeout: float = 60.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(PG_DSN, connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_next_turn_succeeds_after_server_restart(pg_target: str) -> None:
    config = {"configurable": {"thread_id": "restart"}}
    with open_saver(pg_target) as saver:
        graph = child_module().chat_graph(saver)
        graph.invoke({"messages": [HumanMessage("before", id="before")]}, config)
        try:
            subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", *CLUSTER, "restart"],
                           check=True, capture_output=True, timeout=120)
        finally:
            _wait_until_up()
        out = graph.invoke({"messages": [HumanMessage("after", id="after")]}, config)
        assert [m.id for m in out["messages"]] == ["before", "ai-before", "after", "ai-after"]
        assert saver.get_tuple(config).checkpoint["channel_values"]["messages"][-1].id == "ai-after"
