"""A ``plait serve`` starting beside live workers on PostgreSQL does not wait for their transactions."""

from __future__ import annotations

import pathlib

import psycopg
from _pg import private_schema
from _serve_proc import running
from langgraph_sdk import get_sync_client


def test_a_second_server_starts_while_a_write_transaction_holds_the_runs_table(
    tmp_path: pathlib.Path,
) -> None:
    with private_schema("plait_start") as dsn:
        with running(dsn, tmp_path) as first:  # makes the tables
            client = get_sync_client(url=first.url)
            tid = client.threads.create()["thread_id"]
            with psycopg.connect(dsn) as conn:  # a writer's open transaction on runs and threads
                conn.execute("UPDATE plait_server_threads SET status = status WHERE thread_id = %s", (tid,))
                conn.execute("UPDATE plait_server_runs SET status = status")
                conn.execute("UPDATE plait_store SET key = key")
                conn.execute("UPDATE plait_server_crons SET enabled = enabled")
                # an index statement at start-up would wait for this transaction (until the start times out)
                with running(dsn, tmp_path) as second:
                    assert get_sync_client(url=second.url).assistants.search(graph_id="agent")
                conn.rollback()
