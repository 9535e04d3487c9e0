"""A database outage is a 503 with a typed JSON body, on every route, through the app's one error
handler; the server serves again once the database is back.

The PostgreSQL here is a private instance of the test's own (``initdb`` in a temporary directory,
see ``tests/process/test_pg_restart.py``), stopped and started again under a running ``plait serve``.
A corrupt checkpoint row answered from ``/history`` goes through the same handler (one log entry,
nothing left to the ASGI server).
"""

from __future__ import annotations

import pathlib
import sqlite3
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from _serve_proc import running
from langgraph_sdk import get_sync_client

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "process"))
from test_pg_restart import PrivatePostgres, private_pg  # noqa: E402

__all__ = ["private_pg"]  # (the fixture, for the tests of this module)

MSG = {"messages": [{"role": "user", "content": "hi"}]}


def _calls(url: str, tid: str) -> Iterator[tuple[str, httpx.Response]]:
    yield "get thread", httpx.get(f"{url}/threads/{tid}", timeout=60)
    yield "search threads", httpx.post(f"{url}/threads/search", json={}, timeout=60)
    yield "create thread", httpx.post(f"{url}/threads", json={}, timeout=60)
    yield "state", httpx.get(f"{url}/threads/{tid}/state", timeout=60)
    yield "history", httpx.get(f"{url}/threads/{tid}/history", timeout=60)
    yield (
        "runs",
        httpx.post(f"{url}/threads/{tid}/runs", json={"assistant_id": "agent", "input": MSG}, timeout=60),
    )
    yield "assistants", httpx.post(f"{url}/assistants/search", json={}, timeout=60)
    yield "a2a agent card", httpx.get(f"{url}/a2a/agent", timeout=60)
    yield "store", httpx.get(f"{url}/store/items", params={"namespace": "a", "key": "k"}, timeout=60)


def test_a_postgresql_outage_is_a_typed_503_and_the_server_recovers(
    private_pg: PrivatePostgres, tmp_path: pathlib.Path
) -> None:
    with running(private_pg.dsn, tmp_path) as server:
        client = get_sync_client(url=server.url)
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "agent", input=MSG)
        private_pg.stop()
        for what, answer in _calls(server.url, tid):
            assert answer.status_code == 503, (what, answer.status_code, answer.text)
            body = answer.json()
            assert body["error"] == "DatabaseUnavailable", what
            assert "try again" in body["detail"] and "psycopg" not in answer.text, what
            assert answer.headers["retry-after"].isdigit(), what
        private_pg.start()
        deadline = time.monotonic() + 120  # (only so a server that never recovers fails the test)
        while httpx.get(f"{server.url}/threads/{tid}", timeout=60).status_code != 200:
            assert time.monotonic() < deadline, "the server did not serve again after the database came back"
            time.sleep(0.1)
        assert client.runs.wait(tid, "agent", input=MSG)["turns"] == 2
        assert "Exception in ASGI application" not in server.output()


def test_a_corrupt_checkpoint_in_history_goes_through_the_error_handler(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "server.sqlite"
    with running(str(db), tmp_path) as server:
        client = get_sync_client(url=server.url)
        tid = client.threads.create()["thread_id"]
        client.runs.wait(tid, "agent", input=MSG)
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE checkpoints SET checkpoint = X'00ff00' WHERE thread_id = ?", (tid,))
        answer = httpx.get(f"{server.url}/threads/{tid}/history")
        assert answer.status_code == 500 and "corrupt" in answer.json()["detail"]
        assert httpx.get(f"{server.url}/ok").status_code == 200
        log = server.output()
        assert log.count("unexpected error on GET") == 1
        assert "Exception in ASGI application" not in log  # nothing escaped the app's handler


@pytest.mark.parametrize(
    ("error", "down"),
    [
        (sqlite3.OperationalError("database is locked"), True),
        (sqlite3.OperationalError("no such table: x"), False),
        (ValueError("x"), False),
    ],
)
def test_which_errors_mean_the_database_is_down(error: Exception, down: bool) -> None:
    from plait.server._http import database_down

    wrapped = RuntimeError("while reading")
    wrapped.__cause__ = error
    assert (database_down(wrapped) is not None) is down
