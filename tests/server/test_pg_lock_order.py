"""Row locks on PostgreSQL are taken in one order (a thread's row, then its runs): deleting a thread
while one of its runs records its end waits for that run instead of deadlocking.

The test holds the thread's row from its own connection, so the run's end waits for it first, then
the delete; when the row is let go both must complete (with runs locked before the thread, the
delete held the run's row while waiting for the thread: PostgreSQL aborted one of them).
"""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Callable

import httpx
import psycopg
import pytest
from _pg import lock_rows, private_schema, wait_blocked
from _serve_proc import Gate, running
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError


def test_deleting_a_thread_while_its_run_ends_does_not_deadlock(
    tmp_path: pathlib.Path, gates: Callable[[], Gate]
) -> None:
    with private_schema("plait_lock") as dsn, running(dsn, tmp_path) as server:
        client = get_sync_client(url=server.url)
        tid = client.threads.create()["thread_id"]
        gate = gates()
        client.runs.create(tid, "agent", input=gate.input())
        gate.started()
        with psycopg.connect(dsn) as conn:
            holder = lock_rows(
                conn, "SELECT 1 FROM plait_server_threads WHERE thread_id = %s FOR UPDATE", (tid,)
            )
            gate.open()
            wait_blocked(conn, holder, 1)  # the run's end waits for the thread's row
            answers: list[httpx.Response] = []
            deleting = threading.Thread(
                target=lambda: answers.append(httpx.delete(f"{server.url}/threads/{tid}", timeout=120))
            )
            deleting.start()
            wait_blocked(conn, holder, 2)  # ... and so does the delete
            conn.commit()
        deleting.join()
        assert answers[0].status_code == 204, answers[0].text
        assert "Deadlock" not in server.output()
        with pytest.raises(NotFoundError):
            client.threads.get(tid)
        fresh = client.threads.create()["thread_id"]  # the job slot is free: a new run completes
        out = client.runs.wait(fresh, "agent", input={"messages": [{"role": "user", "content": "hi"}]})
        assert isinstance(out, dict) and out["turns"] == 1
