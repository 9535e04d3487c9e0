"""``threads.create(supersteps=...)``: a thread seeded with state updates, as LangGraph's server does it."""

from __future__ import annotations

import httpx
import pytest
from _serve_proc import Server
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import BadRequestError


@pytest.fixture(scope="module")
def server(server_on_both: Server) -> Server:
    return server_on_both


def _say(role: str, text: str) -> dict:
    return {"messages": [{"role": role, "content": text}]}


def test_a_thread_created_with_supersteps_holds_their_state_and_runs_on(server: Server) -> None:
    client = get_sync_client(url=server.url)
    thread = client.threads.create(
        graph_id="agent",
        supersteps=[
            {"updates": [{"values": {**_say("user", "hi"), "turns": 1}, "as_node": "__start__"}]},
            {"updates": [{"values": {**_say("ai", "hello there"), "turns": 1}, "as_node": "chat"}]},
        ],
    )
    # the answer already has the values the supersteps wrote
    assert [m["content"] for m in thread["values"]["messages"]] == ["hi", "hello there"]
    assert thread["values"]["turns"] == 2 and thread["status"] == "idle"
    assert thread["metadata"]["graph_id"] == "agent"
    history = client.threads.get_history(thread["thread_id"])
    assert [(h["metadata"]["source"], h["metadata"]["step"], h["next"]) for h in history] == [
        ("update", 1, []),
        ("update", 0, ["chat"]),  # after the first superstep the graph's next node was due
    ]
    out = client.runs.wait(thread["thread_id"], "agent", input=_say("user", "again"))
    assert [m["content"] for m in out["messages"]] == ["hi", "hello there", "again", "you said: again"]
    assert out["turns"] == 3


def test_a_superstep_may_be_a_command(server: Server) -> None:
    # the SDK always sends "values"; LangGraph's server also takes a "command" (raw HTTP here)
    body = {
        "metadata": {"graph_id": "agent"},
        "supersteps": [{"updates": [{"command": {"update": _say("user", "hi")}, "as_node": "__start__"}]}],
    }
    with httpx.Client(base_url=server.url) as http:
        created = http.post("/threads", json=body)
    assert created.status_code == 200, created.text
    client = get_sync_client(url=server.url)
    state = client.threads.get_state(created.json()["thread_id"])
    assert [m["content"] for m in state["values"]["messages"]] == ["hi"]
    assert state["next"] == ["chat"]


def test_refused_supersteps_are_named_and_bad_ones_are_422(server: Server) -> None:
    client = get_sync_client(url=server.url)
    before = client.threads.count()
    with pytest.raises(BadRequestError, match="Node 'nope' does not exist"):
        client.threads.create(
            graph_id="agent", supersteps=[{"updates": [{"values": _say("user", "x"), "as_node": "nope"}]}]
        )
    # the server names several graphs: which one the updates are for must be said (as LangGraph)
    with pytest.raises(BadRequestError, match="has no graph yet"):
        client.threads.create(
            supersteps=[{"updates": [{"values": _say("user", "x"), "as_node": "__start__"}]}]
        )
    with pytest.raises(BadRequestError, match="supersteps refused"):  # LangChain cannot make messages of 5
        client.threads.create(
            graph_id="agent", supersteps=[{"updates": [{"values": {"messages": 5}, "as_node": "chat"}]}]
        )
    assert client.threads.count() == before  # a refused request leaves no thread behind
    with httpx.Client(base_url=server.url) as http:
        for bad in (
            {"x": 1},
            [{"updates": 3}],
            [{"updates": [5]}],
            [{"updates": [{"as_node": 7}]}],
            [{"updates": [{"command": "x"}]}],
            [{"updates": [{"values": "x"}]}],
            [{"updates": [{"command": {"goto": {"input": 1}}}]}],  # a Send without its node
        ):
            r = http.post("/threads", json={"supersteps": bad})
            assert r.status_code == 422, (bad, r.text)
            assert "supersteps" in r.json()["detail"] or "command.goto" in r.json()["detail"]
        r = http.post("/runs/wait", json={"assistant_id": "agent", "command": {"goto": {"input": 1}}})
        assert r.status_code == 422 and "command.goto" in r.json()["detail"]  # at once, not the run's error
