"""A thread deleted while one of its runs is mid-step: what the run saves as it stops does not bring it back.

A cancelled run saves its last work (the writes of the node that finished in the step, and with
``durability="exit"`` the checkpoint it held back) after the thread's checkpoints were deleted;
the run's end deletes them again, so the thread created afresh under the same id starts empty.
On SQLite and on PostgreSQL (the multi-worker path), through the LangGraph SDK.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest
from _serve_proc import Server, running_on, wait_for_file
from langgraph_sdk import get_sync_client


@pytest.fixture(params=["sqlite", "postgres"])
def fan_server(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Server]:
    app = pathlib.Path(__file__).parent / "app_fan"
    env = {"PLAIT_TEST_GATE": str(tmp_path / "gate")}
    # one run at a time: a run started after another has to wait for the first one's very end
    with running_on(request.param, tmp_path, "--jobs", "1", env=env, app=app, prefix="plait_del") as srv:
        yield srv


@pytest.mark.parametrize("history", [False, True])
def test_a_thread_deleted_mid_run_comes_back_empty(
    fan_server: Server, tmp_path: pathlib.Path, history: bool
) -> None:
    """A new thread (``durability="exit"``), or one with a run before (the default durability)."""
    gate = tmp_path / "gate"
    client = get_sync_client(url=fan_server.url)
    tid = client.threads.create()["thread_id"]
    if history:
        gate.touch()
        client.runs.wait(tid, "fan", input={"log": ["before"]})
        for done in (gate, gate.with_suffix(".fast"), gate.with_suffix(".started")):
            done.unlink()
    client.runs.create(tid, "fan", input={"log": ["in"]}, **({} if history else {"durability": "exit"}))
    wait_for_file(gate.with_suffix(".started"))  # "fast" is done, "slow" runs until the gate opens
    client.threads.delete(tid)
    gate.touch()  # the run stops, saving the finished node's writes and its held checkpoint
    # one job: this run starts once the deleted thread's run has ended (and deleted what it saved)
    assert client.runs.wait(None, "fan", input={"log": ["probe"]}) == {"log": ["probe", "fast", "slow"]}
    client.threads.create(thread_id=tid)
    state = client.threads.get_state(tid)
    assert state["values"] == {} and state["checkpoint"] is None
    assert list(client.threads.get_history(tid)) == []
    out = client.runs.wait(tid, "fan", input={"log": ["again"]})  # a new run starts from nothing either
    assert out == {"log": ["again", "fast", "slow"]}
