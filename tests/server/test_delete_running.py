"""A thread deleted while one of its runs is mid-step: what the run saves as it stops does not bring it back.

A cancelled run saves its last work (the writes of the node that finished in the step, and with
``durability="exit"`` the checkpoint it held back) after the thread's checkpoints were deleted;
the run's end deletes them again, so the thread created afresh under the same id starts empty.
On SQLite and on PostgreSQL (the multi-worker path), through the LangGraph SDK.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Iterator

import pytest
from _serve_proc import Server, running_on
from langgraph_sdk import get_sync_client

SLEEP = 2.0
"""Seconds the slow node sleeps."""


@pytest.fixture(params=["sqlite", "postgres"])
def fan_server(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Server]:
    app = pathlib.Path(__file__).parent / "app_fan"
    env = {"PLAIT_TEST_SLEEP": str(SLEEP)}
    with running_on(request.param, tmp_path, env=env, app=app, prefix="plait_del") as srv:
        yield srv


def test_a_thread_deleted_mid_run_comes_back_empty(fan_server: Server) -> None:
    client = get_sync_client(url=fan_server.url)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "fan", input={"log": ["in"]}, durability="exit")
    deadline = time.monotonic() + 20
    while client.runs.get(tid, run["run_id"])["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.7)  # "fast" is done, "slow" sleeps
    client.threads.delete(tid)
    time.sleep(SLEEP + 1.5)  # the run stops, saving the finished node's writes and its held checkpoint
    client.threads.create(thread_id=tid)
    state = client.threads.get_state(tid)
    assert state["values"] == {} and state["checkpoint"] is None
    assert list(client.threads.get_history(tid)) == []
    out = client.runs.wait(tid, "fan", input={"log": ["again"]})  # a new run starts from nothing either
    assert out == {"log": ["again", "fast", "slow"]}
