"""Storage trust on every saver: prune beside writers, caches that match the disk, leases that never hang."""

from __future__ import annotations

import asyncio
import gc
import random
import threading
import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from plait.checkpoint.base import new_checkpoint_id
from plait.errors import CheckpointConflictError, ThreadBusyError
from plait.graph import END, START, MessagesState, StateGraph


def _echo(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    return {"messages": [AIMessage(f"echo: {last.content}", id=f"ai-{last.id}")]}


def chat(saver: Any) -> Any:
    return (
        StateGraph(MessagesState)
        .add_node("echo", _echo)
        .add_edge(START, "echo")
        .add_edge("echo", END)
        .compile(checkpointer=saver)
    )


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _cold(saver: Any) -> Any:
    """A saver on the same storage with nothing cached."""
    if type(saver).__name__ == "InMemorySaver":
        saver._cache._data.clear()
        return saver
    return type(saver)(saver.conn)


def test_prune_in_a_loop_beside_writer_threads(saver: Any) -> None:
    graph, done = chat(saver), threading.Event()
    acknowledged: list[str] = []
    errors: list[BaseException] = []

    def write(tag: str) -> None:
        try:
            for k in range(25):
                graph.invoke({"messages": [HumanMessage(f"{tag} {k}", id=f"{tag}-{k}")]}, cfg("w"))
                acknowledged.append(f"{tag}-{k}")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    def prune() -> None:
        rng = random.Random(7)
        try:
            while not done.is_set():
                saver.prune("w", keep_last=rng.randint(1, 3))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    writers = [threading.Thread(target=write, args=(t,)) for t in ("a", "b")]
    pruner = threading.Thread(target=prune)
    for t in (*writers, pruner):
        t.start()
    for t in writers:
        t.join()
    done.set()
    pruner.join()
    assert not errors, errors
    cold = chat(_cold(saver))
    for snap in cold.get_state_history(cfg("w")):  # every remaining checkpoint decodes, turns whole
        messages = snap.values["messages"]
        assert [m.id for m in messages[1::2]] == [f"ai-{m.id}" for m in messages[::2]][: len(messages) // 2]
    ids = [m.id for m in cold.get_state(cfg("w")).values["messages"]]
    assert sorted(ids[::2]) == sorted(acknowledged) and ids[1::2] == [f"ai-{i}" for i in ids[::2]]


def test_cache_cannot_drift_from_what_was_stored(saver: Any) -> None:
    graph = chat(saver)
    graph.invoke({"messages": [HumanMessage("one", id="1")]}, cfg("c"))
    for change in (
        lambda m: list.append(m, HumanMessage("sneaky", id="s1")),
        lambda m: list.insert(m, 0, HumanMessage("sneaky", id="s2")),
        lambda m: list.__setitem__(m, 0, HumanMessage("swapped", id="s3")),
    ):
        change(graph.get_state(cfg("c")).values["messages"])
        assert [m.id for m in graph.get_state(cfg("c")).values["messages"]] == ["1", "ai-1"]
    out = graph.invoke({"messages": [HumanMessage("two", id="2")]}, cfg("c"))
    assert [m.id for m in out["messages"]] == ["1", "ai-1", "2", "ai-2"]
    cold = chat(_cold(saver)).get_state(cfg("c")).values["messages"]
    assert [m.id for m in cold] == ["1", "ai-1", "2", "ai-2"]


def _self_invoking(saver: Any, *, use_async: bool) -> Any:
    def node(state: MessagesState) -> dict[str, Any]:
        graph.invoke({"messages": [HumanMessage("inner", id="inner")]}, cfg("self"))
        return {}

    async def anode(state: MessagesState) -> dict[str, Any]:
        await graph.ainvoke({"messages": [HumanMessage("inner", id="inner")]}, cfg("self"))
        return {}

    graph = (
        StateGraph(MessagesState)
        .add_node("n", anode if use_async else node)
        .add_edge(START, "n")
        .compile(checkpointer=saver)
    )
    return graph


def test_a_node_running_its_own_thread_fails_at_once(saver: Any) -> None:
    graph = _self_invoking(saver, use_async=False)
    with pytest.raises(ThreadBusyError, match="would wait for itself") as caught:  # not a lease timeout
        graph.invoke({"messages": [HumanMessage("outer", id="outer")]}, cfg("self"))
    assert caught.value.thread_id == "self"
    # the thread was released: the next run on it is not refused
    chat(saver).invoke(
        {"messages": [HumanMessage("later", id="later")]}, cfg("self"), multitask_strategy="reject"
    )


async def test_an_async_node_running_its_own_thread_fails_at_once(saver: Any) -> None:
    graph = _self_invoking(saver, use_async=True)
    with pytest.raises(ThreadBusyError, match="would wait for itself"):
        await asyncio.wait_for(graph.ainvoke({"messages": [HumanMessage("outer", id="o")]}, cfg("self")), 60)


def test_a_node_may_run_the_graph_on_another_thread(saver: Any) -> None:
    inner = chat(saver)

    def node(state: MessagesState) -> dict[str, Any]:
        out = inner.invoke({"messages": [HumanMessage("inner", id="inner")]}, cfg("elsewhere"))
        return {"messages": [AIMessage(out["messages"][-1].content, id="relay")]}

    outer = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile(checkpointer=saver)
    out = outer.invoke({"messages": [HumanMessage("outer", id="outer")]}, cfg("here"))
    assert out["messages"][-1].content == "echo: inner"


def _hold(saver: Any, thread: str) -> tuple[threading.Event, threading.Event, threading.Thread]:
    """A run that holds ``thread`` until released."""
    inside, release = threading.Event(), threading.Event()

    def wait(state: MessagesState) -> dict[str, Any]:
        inside.set()
        release.wait(120)
        return {}

    graph = StateGraph(MessagesState).add_node("w", wait).add_edge(START, "w").compile(checkpointer=saver)
    runner = threading.Thread(
        target=graph.invoke, args=({"messages": [HumanMessage("h", id="h")]}, cfg(thread))
    )
    runner.start()
    assert inside.wait(120)
    return inside, release, runner


def test_lease_timeout_bounds_the_wait(saver: Any) -> None:
    _, release, runner = _hold(saver, "held")
    try:
        started = time.monotonic()
        with pytest.raises(ThreadBusyError):
            chat(saver).invoke({"messages": [HumanMessage("x", id="x")]}, cfg("held"), lease_timeout=0.3)
        waited = time.monotonic() - started
        assert 0.25 <= waited < 60  # the bound held (else it waits for the release, a deadlock)
    finally:
        release.set()
        runner.join()
    out = chat(saver).invoke({"messages": [HumanMessage("y", id="y")]}, cfg("held"), lease_timeout=5)
    assert out["messages"][-1].content == "echo: y"


async def test_async_lease_timeout_bounds_the_wait(saver: Any) -> None:
    _, release, runner = _hold(saver, "aheld")
    try:
        with pytest.raises(ThreadBusyError):
            await chat(saver).ainvoke(
                {"messages": [HumanMessage("x", id="x")]}, cfg("aheld"), lease_timeout=0.2
            )
    finally:
        release.set()
        await asyncio.to_thread(runner.join)


@pytest.mark.parametrize("bad", [-1, "soon", float("nan"), True])
def test_bad_lease_timeout_is_refused_before_anything_runs(saver: Any, bad: Any) -> None:
    with pytest.raises(ValueError, match="lease_timeout"):
        chat(saver).invoke({"messages": [HumanMessage("x", id="x")]}, cfg("bad"), lease_timeout=bad)
    assert chat(saver).get_state(cfg("bad")).values == {}


def _two_steps(saver: Any) -> Any:
    return (
        StateGraph(MessagesState)
        .add_node("a", _echo)
        .add_node("b", _echo)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=saver)
    )


@pytest.mark.parametrize("how", ["close", "del"])
def test_an_abandoned_stream_releases_its_thread(saver: Any, how: str) -> None:
    graph = _two_steps(saver)
    stream = graph.stream({"messages": [HumanMessage("s", id="s")]}, cfg("st"), stream_mode="updates")
    next(stream)
    if how == "close":
        stream.close()
    else:
        del stream
        gc.collect()
    out = chat(saver).invoke(
        {"messages": [HumanMessage("n", id="n")]}, cfg("st"), multitask_strategy="reject"
    )
    assert out["messages"][-1].content == "echo: n"


async def test_an_abandoned_async_stream_releases_its_thread(saver: Any) -> None:
    graph = _two_steps(saver)
    stream = graph.astream({"messages": [HumanMessage("s", id="s")]}, cfg("ast"), stream_mode="updates")
    await stream.__anext__()
    await stream.aclose()
    out = await chat(saver).ainvoke(
        {"messages": [HumanMessage("n", id="n")]}, cfg("ast"), multitask_strategy="reject"
    )
    assert out["messages"][-1].content == "echo: n"


def _future_head(saver: Any, graph: Any, thread: str) -> str:
    """Store a head checkpoint as a process whose clock is an hour ahead would; return its id."""
    head = graph.get_state(cfg(thread))
    stamp = (time.time_ns() // 100 + 36_000_000_000) << 68
    text = f"{stamp | (0x7 << 64) | (0b10 << 62) | 1:032x}"
    future = f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    assert future > new_checkpoint_id()
    checkpoint = {**saver.get_tuple(head.config).checkpoint, "id": future}
    saver.put(
        head.config,
        checkpoint,
        {"source": "update", "step": head.metadata["step"] + 1, "parents": {}},
        {"messages": 99},
        expected_head=head.config["configurable"]["checkpoint_id"],
    )
    return future


def test_a_head_written_by_a_clock_ahead_does_not_block_this_process(saver: Any) -> None:
    graph = chat(saver)
    graph.invoke({"messages": [HumanMessage("a", id="a")]}, cfg("skew"))
    future = _future_head(saver, graph, "skew")
    out = graph.invoke({"messages": [HumanMessage("b", id="b")]}, cfg("skew"))
    assert [m.id for m in out["messages"]] == ["a", "ai-a", "b", "ai-b"]
    assert graph.get_state(cfg("skew")).config["configurable"]["checkpoint_id"] > future


def test_time_travel_from_a_clock_behind_the_head_writes_every_step(saver: Any) -> None:
    graph = _two_steps(saver)
    graph.invoke({"messages": [HumanMessage("a", id="a")]}, cfg("travel"))
    start = [s for s in graph.get_state_history(cfg("travel")) if s.next == ("a",)][-1]
    future = _future_head(saver, graph, "travel")
    out = graph.invoke(None, start.config)  # replays a and b: three writes after the fork
    assert [m.id for m in out["messages"]] == ["a", "ai-a", "ai-ai-a"]
    newest = graph.get_state(cfg("travel"))
    assert newest.config["configurable"]["checkpoint_id"] > future and newest.next == ()


def test_a_head_that_is_not_a_time_ordered_id_is_refused_by_name(saver: Any) -> None:
    graph = chat(saver)
    graph.invoke({"messages": [HumanMessage("a", id="a")]}, cfg("legacy"))
    head = graph.get_state(cfg("legacy"))
    checkpoint = {**saver.get_tuple(head.config).checkpoint, "id": "legacy-0001"}
    saver.put(head.config, checkpoint, {"source": "update", "step": 9, "parents": {}}, {})
    with pytest.raises(CheckpointConflictError, match="not a time-ordered checkpoint id"):
        graph.invoke({"messages": [HumanMessage("b", id="b")]}, cfg("legacy"))


def test_in_process_lease_tables_do_not_grow_with_threads(saver: Any) -> None:
    graph = chat(saver)
    for k in range(300):
        graph.invoke({"messages": [HumanMessage("x", id="x")]}, cfg(f"many-{k}"))
    from plait.checkpoint import _locks

    assert len(_locks._locks) < 10  # one table of in-process lease locks, for every saver
