"""The HTTP API driven by the official ``langgraph-sdk`` client (sync and async) against a real ``plait serve``."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import httpx
import pytest
from _serve_proc import Gate, Server
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

MSG = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def server(server_on_both: Server) -> Server:
    """The API on both databases."""
    return server_on_both


def _msg(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def _text(values: dict) -> list[str]:
    return [m["content"] for m in values["messages"]]


def test_assistants(server: Server) -> None:
    client = get_sync_client(url=server.url)
    found = client.assistants.search(graph_id="agent")
    assert [a["graph_id"] for a in found] == ["agent"]
    default = found[0]
    assert (
        default["assistant_id"] == "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
    )  # uuid5 of the graph id, as LangGraph
    assert client.assistants.get("agent")["assistant_id"] == default["assistant_id"]
    graph = client.assistants.get_graph(default["assistant_id"])
    assert {"source": "__start__", "target": "chat"} in graph["edges"]
    schemas = client.assistants.get_schemas(default["assistant_id"])
    assert "messages" in schemas["input_schema"]["properties"]
    made = client.assistants.create("agent", context={"c": 2}, name="mine")
    assert (  # the context mirrors into config.configurable, as LangGraph's server does
        made["name"] == "mine"
        and made["config"] == {"configurable": {"c": 2}}
        and made["context"] == {"c": 2}
    )
    updated = client.assistants.update(made["assistant_id"], metadata={"team": "a"})
    assert updated["version"] == 2 and updated["metadata"] == {"team": "a"}
    assert [a["assistant_id"] for a in client.assistants.search(metadata={"team": "a"})] == [
        made["assistant_id"]
    ]
    versions = client.assistants.get_versions(made["assistant_id"], metadata={"team": "a"})
    assert [v["version"] for v in versions] == [2]  # (version 1 had no team)
    with pytest.raises(NotFoundError):
        client.assistants.get(str(uuid.uuid4()))
    with pytest.raises(UnprocessableEntityError):
        client.assistants.get("not-a-uuid")
    with pytest.raises(ConflictError):
        client.assistants.create("agent", assistant_id=made["assistant_id"])
    client.assistants.delete(made["assistant_id"])
    with pytest.raises(NotFoundError):
        client.assistants.get(made["assistant_id"])


def test_threads_crud_and_search(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tag = uuid.uuid4().hex
    thread = client.threads.create(metadata={"tag": tag, "n": 1})
    assert thread["status"] == "idle" and thread["values"] is None
    assert (
        client.threads.create(thread_id=thread["thread_id"], if_exists="do_nothing")["thread_id"]
        == thread["thread_id"]
    )
    with pytest.raises(ConflictError):
        client.threads.create(thread_id=thread["thread_id"])
    client.threads.update(thread["thread_id"], metadata={"n": 2})
    assert client.threads.get(thread["thread_id"])["metadata"] == {"tag": tag, "n": 2}
    other = client.threads.create(metadata={"tag": tag, "n": 3})
    client.runs.wait(other["thread_id"], "agent", input=MSG)
    found = client.threads.search(metadata={"tag": tag})
    assert {t["thread_id"] for t in found} == {thread["thread_id"], other["thread_id"]}
    assert [
        t["thread_id"] for t in client.threads.search(metadata={"tag": tag}, status="idle", limit=1, offset=0)
    ]
    by_values = client.threads.search(metadata={"tag": tag}, values={"turns": 1})
    assert [t["thread_id"] for t in by_values] == [other["thread_id"]]
    assert client.threads.count(metadata={"tag": tag}) == 2
    copied = client.threads.copy(other["thread_id"])
    assert "values" not in copied and copied["metadata"]["tag"] == tag  # (LangGraph's answer to a copy)
    assert _text(client.threads.get_state(copied["thread_id"])["values"]) == ["hi", "you said: hi"]
    assert _text(client.threads.get(copied["thread_id"])["values"]) == ["hi", "you said: hi"]
    client.threads.delete(thread["thread_id"])
    with pytest.raises(NotFoundError):
        client.threads.get(thread["thread_id"])
    with pytest.raises(NotFoundError):
        client.threads.get_state(thread["thread_id"])


def test_state_update_and_history(server: Server) -> None:
    client = get_sync_client(url=server.url)
    thread = client.threads.create()
    tid = thread["thread_id"]
    assert client.threads.get_state(tid)["checkpoint"] is None
    client.runs.wait(tid, "agent", input=MSG)
    state = client.threads.get_state(tid)
    assert _text(state["values"]) == ["hi", "you said: hi"] and state["next"] == []
    written = client.threads.update_state(tid, {"turns": 10}, as_node="chat")
    assert written["checkpoint"]["checkpoint_id"]
    assert client.threads.get_state(tid)["values"]["turns"] == 11
    history = client.threads.get_history(tid, limit=10)
    assert history[0]["values"]["turns"] == 11 and len(history) >= 3
    old = history[-1]["checkpoint"]
    at = client.threads.get_state(tid, checkpoint=old)
    assert at["checkpoint"]["checkpoint_id"] == old["checkpoint_id"]
    assert client.threads.get_state(tid, checkpoint_id=old["checkpoint_id"])["values"] == at["values"]
    assert client.threads.get(tid)["values"]["turns"] == 11


def test_stream_modes(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    parts = list(
        client.runs.stream(
            tid, "agent", input=MSG, stream_mode=["values", "updates", "custom", "messages-tuple", "debug"]
        )
    )
    events = [p.event for p in parts]
    assert events[0] == "metadata"
    assert {"values", "updates", "custom", "messages", "debug"} <= set(events)
    custom = [p.data for p in parts if p.event == "custom"]
    assert custom == [{"progress": "hi"}]
    update = next(p.data for p in parts if p.event == "updates")
    assert update["chat"]["messages"][0]["content"] == "you said: hi"
    message, meta = next(p.data for p in parts if p.event == "messages")
    assert message["content"] == "you said: hi" and meta["langgraph_node"] == "chat"
    assert _text(
        parts[-1].data if parts[-1].event == "values" else [p.data for p in parts if p.event == "values"][-1]
    ) == [
        "hi",
        "you said: hi",
    ]


def test_interrupt_and_resume(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": "ask"}]})
    assert out["__interrupt__"][0]["value"] == {"question": "sure?"}
    thread = client.threads.get(tid)
    assert thread["status"] == "interrupted"
    assert [i["value"] for items in thread["interrupts"].values() for i in items] == [{"question": "sure?"}]
    assert client.threads.get_state(tid)["next"] == ["chat"]
    chunks = list(client.runs.stream(tid, "agent", command={"resume": "yes"}, stream_mode="values"))
    assert _text(chunks[-1].data)[-1] == "answer: yes"
    assert client.threads.get(tid)["status"] == "idle"


def test_background_runs_join_list_get_delete(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "agent", input=MSG)
    assert run["status"] in ("pending", "running", "success")
    assert _text(client.runs.join(tid, run["run_id"])) == ["hi", "you said: hi"]
    assert client.runs.get(tid, run["run_id"])["status"] == "success"
    second = client.runs.create(tid, "agent", input={"messages": [{"role": "user", "content": "again"}]})
    parts = list(client.runs.join_stream(tid, second["run_id"]))
    assert parts and _text(parts[-1].data)[-1] == "you said: again"
    assert [r["run_id"] for r in client.runs.list(tid)] == [second["run_id"], run["run_id"]]
    client.runs.delete(tid, run["run_id"])
    with pytest.raises(NotFoundError):
        client.runs.get(tid, run["run_id"])
    with pytest.raises(NotFoundError):
        client.runs.create(str(uuid.uuid4()), "agent", input=MSG)
    created = client.runs.create(str(uuid.uuid4()), "agent", input=MSG, if_not_exists="create")
    assert _text(client.runs.join(created["thread_id"], created["run_id"]))[-1] == "you said: hi"


def test_errors_are_reported(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    with pytest.raises(Exception, match="RuntimeError: the node failed on purpose"):
        client.runs.wait(tid, "agent", input={"messages": [{"role": "user", "content": "fail"}]})
    assert client.threads.get(tid)["status"] == "error"
    parts = list(client.runs.stream(tid, "agent", input={"messages": [{"role": "user", "content": "fail"}]}))
    assert parts[-1].event == "error" and parts[-1].data["error"] == "RuntimeError"
    assert client.runs.list(tid)[0]["status"] == "error"


def test_cancel_and_multitask(server: Server, gates: Callable[[], Gate]) -> None:
    """Each "slow" run waits at a gate (opened only where the run must end by itself)."""
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    gate = gates()
    slow = client.runs.create(tid, "agent", input=gate.input())
    with pytest.raises(ConflictError):
        client.runs.create(tid, "agent", input=MSG, multitask_strategy="reject")
    queued = client.runs.create(tid, "agent", input=MSG, multitask_strategy="enqueue")
    gate.open()
    client.runs.join(tid, queued["run_id"])
    assert client.runs.get(tid, slow["run_id"])["status"] == "success"
    assert _text(client.threads.get_state(tid)["values"])[-1] == "you said: hi"
    # interrupt: the running run is cancelled, the new one runs
    slow = client.runs.create(tid, "agent", input=gates().input())
    newer = client.runs.create(
        tid, "agent", input={"messages": [{"role": "user", "content": "now"}]}, multitask_strategy="interrupt"
    )
    client.runs.join(tid, newer["run_id"])
    assert client.runs.get(tid, slow["run_id"])["status"] == "interrupted"
    assert _text(client.threads.get_state(tid)["values"])[-1] == "you said: now"
    # rollback: the cancelled run is deleted
    slow = client.runs.create(tid, "agent", input=gates().input())
    newest = client.runs.create(
        tid, "agent", input={"messages": [{"role": "user", "content": "last"}]}, multitask_strategy="rollback"
    )
    client.runs.join(tid, newest["run_id"])
    with pytest.raises(NotFoundError):
        client.runs.get(tid, slow["run_id"])
    # explicit cancel
    slow = client.runs.create(tid, "agent", input=gates().input())
    client.runs.cancel(tid, slow["run_id"], wait=True)
    assert client.runs.get(tid, slow["run_id"])["status"] == "interrupted"
    # cancelled before or while its node ran: "interrupted" while the node is left to run (as LangGraph)
    assert client.threads.get(tid)["status"] in ("idle", "interrupted")


def test_cancel_many_cancels_only_the_runs_it_names_on_their_thread(
    server: Server, gates: Callable[[], Gate]
) -> None:
    client = get_sync_client(url=server.url)
    mine, other = client.threads.create()["thread_id"], client.threads.create()["thread_id"]
    mine_gate, other_gate = gates(), gates()
    ours = client.runs.create(mine, "agent", input=mine_gate.input())
    theirs = client.runs.create(other, "agent", input=other_gate.input())
    mine_gate.started()
    other_gate.started()
    with pytest.raises(NotFoundError):  # (not a run of that thread)
        client.runs.cancel_many(thread_id=mine, run_ids=[theirs["run_id"]])
    for body in (
        {"status": "running", "thread_id": mine},
        {"status": "all", "run_ids": [ours["run_id"]]},
        {},
    ):
        answer = httpx.post(f"{server.url}/runs/cancel", json=body)
        assert answer.status_code == 422 and "status" in answer.json()["detail"], (body, answer.text)
    assert client.runs.get(other, theirs["run_id"])["status"] == "running"
    client.runs.cancel_many(thread_id=mine, run_ids=[ours["run_id"]])
    client.runs.join(mine, ours["run_id"])
    assert client.runs.get(mine, ours["run_id"])["status"] == "interrupted"
    other_gate.open()
    client.runs.join(other, theirs["run_id"])
    assert client.runs.get(other, theirs["run_id"])["status"] == "success"


def test_stateless_runs(server: Server) -> None:
    client = get_sync_client(url=server.url)
    assert _text(client.runs.wait(None, "agent", input=MSG)) == ["hi", "you said: hi"]
    parts = list(client.runs.stream(None, "agent", input=MSG, stream_mode="updates"))
    assert [p.event for p in parts] == ["metadata", "updates"]


def test_a_stateless_run_kept_leaves_its_thread(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tag = uuid.uuid4().hex
    run = client.runs.create(None, "agent", input=MSG, on_completion="keep", metadata={"tag": tag})
    client.runs.join(run["thread_id"], run["run_id"])
    thread = client.threads.get(run["thread_id"])
    assert thread["metadata"] == {"tag": tag, "graph_id": "agent", "assistant_id": run["assistant_id"]}
    assert _text(thread["values"]) == ["hi", "you said: hi"]
    assert client.runs.get(run["thread_id"], run["run_id"])["status"] == "success"
    gone = client.runs.create(None, "agent", input=MSG)  # on_completion="delete", the default
    deadline = time.monotonic() + 60  # (only so a thread never deleted fails the test)
    with pytest.raises(NotFoundError):
        while time.monotonic() < deadline:
            client.threads.get(gone["thread_id"])
            time.sleep(0.05)


def test_store_endpoints_and_nodes_share_the_store(server: Server) -> None:
    client = get_sync_client(url=server.url)
    client.store.put_item(["users", "u1"], "prefs", {"color": "blue", "n": 3})
    item = client.store.get_item(["users", "u1"], "prefs")
    assert item["value"] == {"color": "blue", "n": 3} and item["namespace"] == ["users", "u1"]
    assert [i["key"] for i in client.store.search_items(["users"], filter={"n": {"$gt": 2}})["items"]] == [
        "prefs"
    ]
    assert client.store.search_items(["users"], filter={"n": {"$gt": 5}})["items"] == []
    assert ["users", "u1"] in client.store.list_namespaces(prefix=["users"])["namespaces"]
    client.store.delete_item(["users", "u1"], "prefs")
    assert client.store.get_item(["users", "u1"], "prefs") is None  # 200 null, as LangGraph's server
    client.runs.wait(None, "agent", input={"messages": [{"role": "user", "content": "remember:tea"}]})
    assert client.store.get_item(["memories"], "last")["value"] == {"text": "tea"}


def test_bad_input_is_422_or_404_never_500(server: Server) -> None:
    bad = [
        ("POST", "/threads", b"{nope"),
        ("POST", "/threads", b""),  # a body is required, as by LangGraph's server
        ("POST", "/threads", b"[1]"),
        ("POST", "/threads", b'{"thread_id": "x"}'),
        ("POST", "/threads/search", b'{"limit": "ten"}'),
        ("POST", "/runs/wait", b'{"assistant_id": 5}'),
        ("POST", "/runs/wait", b'{"assistant_id": "agent", "stream_mode": "bogus"}'),
        ("POST", "/runs/wait", b'{"assistant_id": "agent", "multitask_strategy": "x"}'),
        ("POST", "/runs/wait", b'{"assistant_id": "agent", "webhook": "http://x"}'),
        ("POST", "/runs/wait", b'{"assistant_id": "agent", "input": 3}'),
        ("POST", "/runs/wait", b'{"assistant_id": "agent", "after_seconds": -1}'),
        ("POST", "/runs/wait", b'{"assistant_id": "agent", "after_seconds": "soon"}'),
        ("PUT", "/store/items", b'{"namespace": ["a"], "key": "k", "value": 3}'),
        ("POST", "/assistants", b'{"graph_id": 3}'),
    ]
    with httpx.Client(base_url=server.url) as http:
        for method, path, content in bad:
            r = http.request(method, path, content=content, headers={"content-type": "application/json"})
            assert r.status_code == 422, (path, content, r.text)
            assert "detail" in r.json()
        for path in ("/threads/" + str(uuid.uuid4()), "/assistants/" + str(uuid.uuid4()), "/nope"):
            r = http.get(path)
            assert r.status_code == 404 and "detail" in r.json()
        r = http.post("/runs/wait", json={"assistant_id": str(uuid.uuid4())})
        assert r.status_code == 404


async def test_async_client(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    out = await client.runs.wait(thread["thread_id"], "agent", input=MSG)
    assert _text(out) == ["hi", "you said: hi"]
    events = [
        p.event
        async for p in client.runs.stream(thread["thread_id"], "agent", input=MSG, stream_mode="updates")
    ]
    assert events == ["metadata", "updates"]
    assert len(await client.threads.get_history(thread["thread_id"])) >= 4
    assert (await client.assistants.search())[0]["graph_id"] in (
        "agent",
        "two_steps",
        "nested",
        "talk",
        "asks_inside",
    )


def test_a_queued_run_whose_assistant_was_deleted_ends_in_error_for_its_clients(
    server: Server, gates: Callable[[], Gate]
) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    custom = client.assistants.create("agent", name="gone soon")
    gate = gates()
    client.runs.create(tid, "agent", input=gate.input())  # runs until the assistant is deleted
    queued = client.runs.create(tid, custom["assistant_id"], input=MSG, multitask_strategy="enqueue")
    client.assistants.delete(custom["assistant_id"])
    gate.open()
    outcome: list[object] = []
    joiner = threading.Thread(
        target=lambda: outcome.append(client.runs.join(tid, queued["run_id"])), daemon=True
    )
    joiner.start()
    joiner.join(30)
    assert outcome, "runs.join of a run that could not start never ended"
    assert outcome[0] == {"__error__": {"error": "ApiError", "message": outcome[0]["__error__"]["message"]}}  # type: ignore[index]
    assert "not found" in outcome[0]["__error__"]["message"]  # type: ignore[index]
    assert client.runs.get(tid, queued["run_id"])["status"] == "error"
    assert client.threads.get(tid)["status"] == "error"  # not left busy


def test_a_run_created_with_after_seconds_waits_that_long_and_keeps_its_place(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create()["thread_id"]
    started = time.monotonic()
    late = client.runs.create(tid, "agent", input=_msg("first"), after_seconds=1.5)
    behind = client.runs.create(tid, "agent", input=_msg("second"))  # queued behind it (enqueue)
    seen = [client.runs.get(tid, r["run_id"])["status"] for r in (late, behind)]
    if time.monotonic() - started < 1.5:  # answered before the delay could end (it began after ``started``)
        assert seen == ["pending", "pending"]
    client.runs.join(tid, behind["run_id"])
    assert time.monotonic() - started >= 1.5
    assert client.runs.get(tid, late["run_id"])["status"] == "success"
    values = client.threads.get_state(tid)["values"]
    assert _text(values) == ["first", "you said: first", "second", "you said: second"]
    # a delayed run can be cancelled before it starts: it never runs
    never = client.runs.create(tid, "agent", input=_msg("never"), after_seconds=30)
    client.runs.cancel(tid, never["run_id"])
    assert client.runs.get(tid, never["run_id"])["status"] == "interrupted"
    assert len(_text(client.threads.get_state(tid)["values"])) == 4


def test_threads_prune_deletes_threads_or_keeps_their_latest_state(server: Server) -> None:
    client = get_sync_client(url=server.url)
    gone, kept = client.threads.create()["thread_id"], client.threads.create()["thread_id"]
    for tid in (gone, kept):
        client.runs.wait(tid, "agent", input=_msg("one"))
        client.runs.wait(tid, "agent", input=_msg("two"))
    before = client.threads.get_state(kept)["values"]
    assert len(client.threads.get_history(kept, limit=100)) > 1
    assert client.threads.prune([gone, str(uuid.uuid4())]) == {"pruned_count": 1}  # unknown: skipped
    with pytest.raises(NotFoundError):
        client.threads.get(gone)
    assert client.threads.prune([kept], strategy="keep_latest") == {"pruned_count": 1}
    assert len(client.threads.get_history(kept, limit=100)) == 1
    assert client.threads.get_state(kept)["values"] == before
    out = client.runs.wait(kept, "agent", input=_msg("three"))  # the thread goes on from its latest state
    assert _text(out)[-2:] == ["three", "you said: three"] and len(_text(out)) == 6
    assert client.threads.prune([]) == {"pruned_count": 0}
    for bad in ({"thread_ids": ["nope"]}, {"thread_ids": [kept], "strategy": "all"}, {"thread_ids": "x"}):
        r = httpx.post(f"{server.url}/threads/prune", json=bad)
        assert r.status_code == 422 and "detail" in r.json(), bad


def test_joining_a_queued_run_ends_when_its_thread_is_pruned_or_a_new_run_interrupts_it(
    server: Server,
) -> None:
    client = get_sync_client(url=server.url)
    for remove in ("prune", "interrupt"):
        tid = client.threads.create()["thread_id"]
        queued = client.runs.create(tid, "agent", input=_msg("later"), after_seconds=60)
        joiner = threading.Thread(target=client.runs.join, args=(tid, queued["run_id"]))
        joiner.start()  # (joining late, after the removal, ends at once too)
        if remove == "prune":
            assert client.threads.prune([tid]) == {"pruned_count": 1}
        else:
            client.runs.wait(tid, "agent", input=_msg("now"), multitask_strategy="interrupt")
            assert client.runs.get(tid, queued["run_id"])["status"] == "interrupted"
        joiner.join(timeout=60)  # (a minute: only so a broken server fails instead of hanging)
        assert not joiner.is_alive(), f"join hung after {remove}"
