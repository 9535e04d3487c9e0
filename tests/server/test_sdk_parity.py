"""What an SDK client sees as ``langgraph dev`` shows it (differences found by tools/server_diff.py).

Each test drives a real ``plait serve`` (SQLite) with the official ``langgraph-sdk`` client.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from _serve_proc import Gate, Server
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import BadRequestError, NotFoundError, UnprocessableEntityError

MSG = {"messages": [{"role": "user", "content": "hi"}]}


def _msg(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def test_stream_subgraphs_names_events_by_namespace(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "nested", input=MSG, stream_mode=["updates"], stream_subgraphs=True))
    events = [p.event for p in parts]
    inner = [e for e in events if e.startswith("updates|")]
    assert inner and inner[0].startswith("updates|inner:"), events
    assert parts[events.index(inner[0])].data == {"inner_step": {"turns": 1}}
    assert events[-1] == "updates" and "inner" in parts[-1].data
    flat = list(client.runs.stream(tid, "nested", input=MSG, stream_mode=["updates"]))
    assert all("|" not in p.event for p in flat)


def test_streamed_values_and_the_runs_end_show_every_message_with_its_id(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    # with updates streamed, the node's messages are encoded before the state gives them their
    # ids; the values after, and the second run's, show the ids
    for _ in range(2):
        parts = list(client.runs.stream(tid, "agent", input=MSG, stream_mode=["values", "updates", "custom"]))
        values = [p.data for p in parts if p.event == "values"]
        assert all(m["id"] for v in values for m in v["messages"])
    final = client.threads.get_state(tid)["values"]["messages"]
    assert [m["id"] for m in final] == [m["id"] for m in values[-1]["messages"]]


def test_stream_mode_events(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "agent", input=MSG, stream_mode="events"))
    assert parts[0].event == "metadata" and {p.event for p in parts[1:]} == {"events"}
    seen = [(p.data["event"], p.data["name"]) for p in parts[1:]]
    assert seen[0] == ("on_chain_start", "agent") and seen[-1] == ("on_chain_end", "agent")
    assert ("on_chain_start", "chat") in seen and ("on_chain_end", "chat") in seen
    assert {"run_id", "tags", "metadata", "data", "parent_ids"} <= set(parts[1].data)
    both = list(client.runs.stream(tid, "agent", input=MSG, stream_mode=["events", "values"]))
    assert {"metadata", "events", "values"} == {p.event for p in both}
    assert both[-1].event == "events" or both[-1].data["messages"][-1]["content"] == "you said: hi"
    hidden = list(client.runs.stream(tid, "agent", input=_msg("hidden"), stream_mode="events"))
    names = {p.data["name"] for p in hidden[1:]}
    assert "chat" in names and "secret" not in names  # tagged langsmith:hidden: not streamed


def test_debug_and_tasks_payloads(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    debug = [
        p.data for p in client.runs.stream(tid, "agent", input=MSG, stream_mode="debug") if p.event == "debug"
    ]
    checkpoint = next(d["payload"] for d in debug if d["type"] == "checkpoint")
    assert checkpoint["checkpoint"]["thread_id"] == tid and "parent_checkpoint" in checkpoint
    result = next(d["payload"] for d in debug if d["type"] == "task_result")
    assert result["result"]["turns"] == 1 and result["result"]["messages"][0]["content"] == "you said: hi"
    tasks = [
        p.data for p in client.runs.stream(tid, "agent", input=MSG, stream_mode="tasks") if p.event == "tasks"
    ]
    assert tasks[-1]["name"] == "chat" and tasks[-1]["result"]["turns"] == 1


def test_messages_tuple_ids_are_those_of_the_state(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    parts = list(client.runs.stream(tid, "agent", input=MSG, stream_mode="messages-tuple"))
    streamed = [p.data[0] for p in parts if p.event == "messages"]
    assert streamed and streamed[0]["id"]
    state = client.threads.get_state(tid)["values"]["messages"]
    assert streamed[0]["id"] == state[-1]["id"]


def test_assistant_config_and_context_mirror_each_other(server: Server) -> None:
    client = get_sync_client(url=server.url)
    with pytest.raises(BadRequestError):
        client.assistants.create("agent", config={"configurable": {"a": 1}}, context={"b": 2})
    by_config = client.assistants.create("agent", config={"configurable": {"a": 1}, "tags": ["t"]})
    assert by_config["context"] == {"a": 1} and by_config["config"]["tags"] == ["t"]
    made = client.assistants.create("agent", context={"model": "m1"})
    assert made["config"] == {"configurable": {"model": "m1"}}
    updated = client.assistants.update(made["assistant_id"], context={"model": "m2"})
    assert updated["config"] == {"configurable": {"model": "m2"}} and updated["context"] == {"model": "m2"}
    renamed = client.assistants.update(made["assistant_id"], name="n")
    assert renamed["context"] == {"model": "m2"} and renamed["config"] == {"configurable": {"model": "m2"}}
    versions = client.assistants.get_versions(made["assistant_id"])
    assert [v["version"] for v in versions] == [3, 2, 1] and all("updated_at" not in v for v in versions)


def test_subgraphs_xray_and_schemas(server: Server) -> None:
    client = get_sync_client(url=server.url)
    aid = client.assistants.search(graph_id="nested")[0]["assistant_id"]
    found = client.assistants.get_subgraphs(aid)
    assert list(found) == ["inner"]
    assert set(found["inner"]) == {
        "input_schema",
        "output_schema",
        "state_schema",
        "config_schema",
        "context_schema",
    }
    assert found["inner"]["state_schema"]["title"] == "LangGraphState"
    assert client.assistants.get_subgraphs(aid, recurse=True).keys() == {"inner"}
    drawn = client.assistants.get_graph(aid, xray=True)
    assert {"source": "chat", "target": "inner:inner_step"} in drawn["edges"]
    assert {"id": "__end__"} in drawn["nodes"]
    schemas = client.assistants.get_schemas(aid)
    state = schemas["state_schema"]
    assert state["title"] == "nested_state" and "required" not in state
    assert state["properties"]["turns"]["default"] is None
    assert schemas["config_schema"] == {} and schemas["context_schema"] is None


def test_store_missing_item_is_null_and_search_keeps_write_order(server: Server) -> None:
    client = get_sync_client(url=server.url)
    top = uuid.uuid4().hex
    assert client.store.get_item([top], "nope") is None
    client.store.put_item([top, "b"], "k1", {"v": 1})
    client.store.put_item([top, "c"], "k2", {"v": 2})
    client.store.put_item([top, "b"], "k3", {"v": 3})
    client.store.put_item([top, "b"], "k1", {"v": 4})  # an update keeps its place
    keys = [i["key"] for i in client.store.search_items([top])["items"]]
    assert keys == ["k1", "k3", "k2"]
    page = client.store.search_items([top], limit=2, offset=1)["items"]  # a page of that order
    assert [i["key"] for i in page] == ["k3", "k2"]
    picked = client.store.search_items([top], filter={"v": {"$gt": 1}}, limit=1, offset=1)["items"]
    assert [i["key"] for i in picked] == ["k3"]  # the page is cut after the filter: k1 (v=4), k3, k2


def test_cancel_wait_answers_an_object_and_leaves_the_thread_interrupted(
    server: Server, gates: Callable[[], Gate]
) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    assert "error" not in client.threads.get(tid) and "interrupts" not in client.threads.get(tid)
    gate = gates()
    run = client.runs.create(tid, "agent", input=gate.input())
    gate.started()  # inside its node, which runs until the test ends
    assert client.runs.cancel(tid, run["run_id"], wait=True) == {}
    assert client.runs.get(tid, run["run_id"])["status"] == "interrupted"
    thread = client.threads.get(tid)
    assert thread["status"] == "interrupted"  # "chat" is left to run
    assert thread["error"] == {
        "error": "UserInterrupt",
        "message": "interrupt requested via POST /threads/{thread_id}/runs/{run_id}/cancel",
    }
    assert client.threads.get_state(tid)["next"] == ["chat"]


def test_thread_config_after_a_run_and_update_errors(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "agent", input=MSG)
    thread = client.threads.get(tid)
    assert thread["config"] == {"configurable": {}} and thread["interrupts"] == {}
    with pytest.raises(BadRequestError):
        client.threads.update_state(tid, {"turns": 1}, as_node="ghost")


def test_join_stream_from_the_start_begins_with_metadata(server: Server, gates: Callable[[], Gate]) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    gate = gates()
    run = client.runs.create(tid, "agent", input=gate.input(), stream_mode=["values"])
    parts = []
    for part in client.runs.join_stream(tid, run["run_id"]):  # joined while the run runs
        parts.append(part)
        gate.open()
    assert parts[0].event == "metadata" and parts[0].data["run_id"] == run["run_id"]
    assert parts[-1].event == "values"


def test_interrupts_in_a_run_output_and_in_the_state(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "agent", input=_msg("ask"))
    assert out["__interrupt__"][0]["value"] == {"question": "sure?"}
    assert "response_schema" in out["__interrupt__"][0] and out["__interrupt__"][0]["response_schema"] is None
    state = client.threads.get_state(tid)
    assert set(state["interrupts"][0]) == {"id", "value"}


def test_subgraph_task_checkpoint_and_run_shape(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "nested", input=MSG, interrupt_before=["inner"])
    task = client.threads.get_state(tid)["tasks"][0]
    assert task["name"] == "inner" and task["checkpoint"]["checkpoint_ns"].startswith("inner:")
    assert task["checkpoint"]["thread_id"] == tid
    run = client.runs.create(None, "agent", input=MSG)
    assert run["metadata"]["assistant_id"] == run["assistant_id"]
    kwargs = run["kwargs"]
    assert (
        kwargs["durability"] == "async" and kwargs["webhook"] is None and kwargs["checkpoint_during"] is True
    )
    assert "feedback_keys" in kwargs
    assert kwargs["config"]["configurable"]["run_id"] == run["run_id"]
    assert kwargs["config"]["metadata"]["assistant_id"] == run["assistant_id"]


def test_rollback_of_a_threads_first_run_leaves_it_empty(server: Server, gates: Callable[[], Gate]) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    gate = gates()
    client.runs.create(tid, "agent", input=gate.input())
    gate.started()  # inside its node, which runs until the test ends
    second = client.runs.create(tid, "agent", input=MSG, multitask_strategy="rollback")
    out = client.runs.join(tid, second["run_id"])
    assert [m["content"] for m in out["messages"]] == ["hi", "you said: hi"]  # no trace of the first
    assert [r["run_id"] for r in client.runs.list(tid)] == [second["run_id"]]
    assert client.threads.get(tid)["error"] is None  # the second run's end clears the first one's cancel


def test_thread_join_stream_follows_the_threads_runs(server: Server, gates: Callable[[], Gate]) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    with pytest.raises(NotFoundError):
        next(iter(client.threads.join_stream(str(uuid.uuid4()))))
    gate = gates()
    run = client.runs.create(tid, "agent", input=gate.input())
    parts = []
    for part in client.threads.join_stream(tid):  # joined while the run is in flight
        parts.append(part)
        gate.open()
        if part.event == "metadata" and part.data.get("status") == "run_done":
            break
    assert parts[0].event == "metadata" and parts[0].data == {"run_id": run["run_id"], "attempt": 1}
    assert parts[-1].data == {"status": "run_done", "run_id": run["run_id"]}
    assert (
        parts[-2].event == "values" and parts[-2].data["messages"][-1]["content"] == f"you said: {gate.text}"
    )
    with pytest.raises(UnprocessableEntityError, match="state_update is not implemented"):
        next(iter(client.threads.join_stream(tid, params={"stream_modes": "state_update"})))


def test_thread_join_stream_joined_before_any_run_sees_the_next_runs(
    server: Server, gates: Callable[[], Gate]
) -> None:
    """The first run waits at a gate the test opens once the stream shows it (so it is followed
    whether it was created just before or just after the join); the second starts after it ends."""
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    created: list[str] = []
    gate = gates()

    def later() -> None:
        for text in (gate.text, "again"):
            run = client.runs.create(tid, "agent", input=_msg(text))
            created.append(run["run_id"])
            client.runs.join(tid, run["run_id"])

    starter = threading.Thread(target=later)
    starter.start()
    done: list[str] = []
    for part in client.threads.join_stream(tid, stream_mode="values"):
        gate.open()
        if part.event == "metadata" and part.data.get("status") == "run_done":
            done.append(part.data["run_id"])
            if len(done) == 2:
                break
    starter.join()
    assert done == created


def test_durability_reaches_the_run(server: Server) -> None:
    client = get_sync_client(url=server.url)
    counts = {}
    for name, extra in (
        ("async", {}),
        ("exit", {"durability": "exit"}),
        ("no_during", {"checkpoint_during": False}),
    ):
        tid = client.threads.create()["thread_id"]
        run = client.runs.create(tid, "agent", input=MSG, **extra)
        client.runs.join(tid, run["run_id"])
        counts[name] = len(client.threads.get_history(tid, limit=50))
        kept = client.runs.get(tid, run["run_id"])["kwargs"]["durability"]
        assert kept == ("async" if name == "async" else "exit")
    assert counts["async"] == 3 and counts["exit"] == counts["no_during"] == 1, counts
    tid = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match="durability"):
        client.runs.create(tid, "agent", input=MSG, durability="later")


def test_a_run_queued_behind_a_busy_thread_leaves_its_config(
    server: Server, gates: Callable[[], Gate]
) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    gate = gates()
    client.runs.create(tid, "agent", input=gate.input(), config={"tags": ["a"]})
    gate.started()
    second = client.runs.create(tid, "agent", input=MSG, config={"tags": ["b"]}, multitask_strategy="enqueue")
    assert client.threads.get(tid)["config"]["tags"] == ["a"]  # busy: the queued run's config waits
    gate.open()
    client.runs.join(tid, second["run_id"])


def test_messages_mode_partials_carry_the_whole_message_so_far(server: Server) -> None:
    client = get_sync_client(url=server.url)
    parts = list(client.runs.stream(None, "talk", input=MSG, stream_mode="messages"))
    events = [p.event for p in parts]
    assert events[:2] == ["metadata", "messages/metadata"], events
    partials = [p.data for p in parts if p.event == "messages/partial"]
    assert [m["content"] for (m,) in partials] == [
        "hello",
        "hello ",
        "hello there",
        "hello there ",
        "hello there my",
        "hello there my ",
        "hello there my friend",
    ]
    for (message,) in partials:  # a message, as LangGraph's server sends it, not a chunk
        assert message["type"] == "ai" and message["tool_calls"] == []
        assert "tool_call_chunks" not in message and "chunk_position" not in message
    assert len({m["id"] for (m,) in partials}) == 1
    (meta,) = [p.data for p in parts if p.event == "messages/metadata"]
    assert (
        list(meta) == [partials[0][0]["id"]]
        and meta[partials[0][0]["id"]]["metadata"]["langgraph_node"] == "talk"
    )


def test_updating_the_state_of_a_thread_no_graph_ran_on_is_a_bad_request(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    with pytest.raises(BadRequestError, match="has no graph yet"):  # several graphs: which one is unknown
        client.threads.update_state(tid, {"turns": 1}, as_node="chat")


def test_the_graph_drawing_shows_a_tool_nodes_tools(server: Server) -> None:
    client = get_sync_client(url=server.url)
    drawn = client.assistants.get_graph("talk")
    nodes = {n["id"]: n for n in drawn["nodes"]}
    assert nodes["tools"]["metadata"] == {"__tools": ["lookup"]}
    assert "metadata" not in nodes["talk"]  # none to show
    assert {"source": "talk", "target": "tools", "conditional": True} in drawn["edges"]
