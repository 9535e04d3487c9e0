"""A paused subgraph's state through the API: ``get_state(subgraphs=True)`` and ``checkpoint_ns``."""

from __future__ import annotations

import httpx
import pytest
from _serve_proc import Server
from langgraph_sdk import get_sync_client


@pytest.fixture(scope="module")
def server(server_on_both: Server) -> Server:
    return server_on_both


def test_a_paused_subgraphs_state_is_read_inside_its_task_or_by_its_namespace(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "asks_inside", input={"messages": [{"role": "user", "content": "hi"}]})

    plain = client.threads.get_state(tid)
    (task,) = plain["tasks"]
    assert task["name"] == "inner" and task["state"] is None
    namespace = task["checkpoint"]["checkpoint_ns"]
    assert namespace.startswith("inner:")

    nested = client.threads.get_state(tid, subgraphs=True)["tasks"][0]["state"]
    assert nested["next"] == ["ask"]
    assert [i["value"] for i in nested["interrupts"]] == ["inner question"]
    assert nested["checkpoint"]["checkpoint_ns"] == namespace
    assert nested["checkpoint"]["checkpoint_map"][""] == plain["checkpoint_id"]  # as LangGraph shows it

    child = client.threads.get_state(tid, checkpoint={"checkpoint_ns": namespace})
    assert child["next"] == ["ask"] and child["checkpoint"]["checkpoint_ns"] == namespace
    assert [m["content"] for m in child["values"]["messages"]] == ["hi"]
    assert [h["next"] for h in client.threads.get_history(tid, checkpoint={"checkpoint_ns": namespace})][
        0
    ] == ["ask"]

    out = client.runs.wait(tid, "asks_inside", command={"resume": "yes"})
    assert out["messages"][-1]["content"] == "inner got: yes"
    assert client.threads.get_state(tid, subgraphs=True)["tasks"] == []


def test_subgraphs_must_be_a_boolean(server: Server) -> None:
    tid = get_sync_client(url=server.url).threads.create()["thread_id"]
    with httpx.Client(base_url=server.url) as http:
        r = http.post(f"/threads/{tid}/state/checkpoint", json={"checkpoint": {}, "subgraphs": "yes"})
        assert r.status_code == 422 and "subgraphs" in r.json()["detail"]
        r = http.post(f"/threads/{tid}/state/checkpoint", json={"checkpoint": {"checkpoint_ns": 3}})
        assert r.status_code == 422 and "checkpoint_ns" in r.json()["detail"]
