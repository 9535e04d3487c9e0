"""Read-modify-writes of a row happen under its lock (PostgreSQL, where requests really overlap):
what another writer stored meanwhile is never undone by a document read before it.

Each test holds a row from its own connection, so the writers queue behind it in a known order;
when the row is let go each must see what the one before it wrote: a thread patched while its run
records its end keeps that end (status, values), two updates of an assistant make two versions.
"""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Callable

import httpx
import psycopg
from _pg import lock_rows, private_schema, wait_blocked
from _serve_proc import Gate, running
from langgraph_sdk import get_sync_client


def test_a_patch_made_while_a_run_ends_keeps_the_runs_end(
    tmp_path: pathlib.Path, gates: Callable[[], Gate]
) -> None:
    with private_schema("plait_patch") as dsn, running(dsn, tmp_path) as server:
        client = get_sync_client(url=server.url)
        tid = client.threads.create(metadata={"kept": 1})["thread_id"]
        gate = gates()
        run = client.runs.create(tid, "agent", input=gate.input())
        gate.started()
        with psycopg.connect(dsn) as conn:
            holder = lock_rows(
                conn, "SELECT 1 FROM plait_server_threads WHERE thread_id = %s FOR UPDATE", (tid,)
            )
            gate.open()
            wait_blocked(conn, holder, 1)  # the run's end waits for the thread's row
            answers: list[httpx.Response] = []
            patching = threading.Thread(
                target=lambda: answers.append(
                    httpx.patch(f"{server.url}/threads/{tid}", json={"metadata": {"added": 2}}, timeout=120)
                )
            )
            patching.start()
            wait_blocked(conn, holder, 2)  # ... and so does the patch
            conn.commit()
        patching.join()
        assert answers[0].status_code == 200, answers[0].text
        client.runs.join(tid, run["run_id"])
        thread = client.threads.get(tid)
        assert thread["status"] == "idle", thread
        assert thread["values"] is not None and thread["values"]["turns"] == 1
        assert thread["metadata"]["kept"] == 1 and thread["metadata"]["added"] == 2


def test_two_updates_of_an_assistant_at_once_make_two_versions(tmp_path: pathlib.Path) -> None:
    with private_schema("plait_patch") as dsn, running(dsn, tmp_path) as server:
        client = get_sync_client(url=server.url)
        aid = client.assistants.create("agent", name="v1", metadata={"kept": 1})["assistant_id"]
        answers: list[httpx.Response] = []

        def patch(name: str) -> threading.Thread:
            body = {"name": name, "metadata": {name: True}}
            call = threading.Thread(
                target=lambda: answers.append(
                    httpx.patch(f"{server.url}/assistants/{aid}", json=body, timeout=120)
                )
            )
            call.start()
            return call

        with psycopg.connect(dsn) as conn:
            holder = lock_rows(
                conn, "SELECT 1 FROM plait_server_assistants WHERE assistant_id = %s FOR UPDATE", (aid,)
            )
            first = patch("a")
            wait_blocked(conn, holder, 1)
            second = patch("b")
            wait_blocked(conn, holder, 2)
            conn.commit()
        first.join()
        second.join()
        assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
        assert sorted(a.json()["version"] for a in answers) == [2, 3]
        versions = client.assistants.get_versions(aid)
        assert [(v["version"], v["name"]) for v in versions] == [(3, "b"), (2, "a"), (1, "v1")]
        current = client.assistants.get(aid)
        assert current["version"] == 3 and current["name"] == "b"
        assert current["metadata"] == {"kept": 1, "a": True, "b": True}
