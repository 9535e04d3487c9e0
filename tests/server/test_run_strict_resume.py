"""``runs.create(..., strict_resume=True)``: a resume that answers no pending interrupt fails the run."""

from __future__ import annotations

import httpx
import pytest
from _serve_proc import Server
from langgraph_sdk import get_sync_client


@pytest.fixture(scope="module")
def server(server_on_both: Server) -> Server:
    return server_on_both


def test_a_strict_resume_of_an_unknown_interrupt_fails_and_leaves_the_thread(server: Server) -> None:
    client = get_sync_client(url=server.url)
    assert client.http.get("/info")["flags"]["strict_resume"] is True  # the SDK's test for support
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": "ask"}]})
    asked = client.threads.get_state(tid)
    wrong = {"resume": {"0" * 32: "yes"}}
    run = client.runs.create(tid, "agent", command=wrong, strict_resume=True)
    client.runs.join(tid, run["run_id"])
    assert client.runs.get(tid, run["run_id"])["status"] == "error"
    after = client.threads.get_state(tid)
    assert after["checkpoint_id"] == asked["checkpoint_id"] and after["next"] == ["chat"]
    (question,) = after["interrupts"]
    out = client.runs.wait(tid, "agent", command={"resume": {question["id"]: "yes"}}, strict_resume=True)
    assert out["messages"][-1]["content"] == "answer: yes"


def test_strict_resume_must_be_a_boolean(server: Server) -> None:
    with httpx.Client(base_url=server.url) as http:
        r = http.post("/runs/wait", json={"assistant_id": "agent", "strict_resume": "yes"})
    assert r.status_code == 422 and "strict_resume" in r.json()["detail"]
