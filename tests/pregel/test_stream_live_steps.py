"""A sync stream's live step (pregel/_live.py): events reach the caller while the node runs, from
the node's own thread or from threads it starts, in order; the caller's context and a stream read
across threads."""

from __future__ import annotations

import asyncio
import contextvars
import operator
import threading
from collections.abc import Iterator
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.config import get_stream_writer
from plait.graph import START, StateGraph

LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("label", default="unset")


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _graph(node: Any) -> Any:
    return StateGraph(S).add_node("n", node).add_edge(START, "n").compile()


def _stream(graph: Any) -> Iterator[Any]:
    return iter(graph.stream({"x": []}, stream_mode="custom"))


def test_a_stream_read_on_another_thread_is_still_live() -> None:
    """Off the main thread the step runs on a runner thread: the event still comes out while the
    node waits for the caller to have it."""
    out: list[Any] = []

    def node(state: S) -> dict[str, Any]:
        received = threading.Event()
        out.append(received)
        get_stream_writer()("before")
        out.append(received.wait(60))
        return {"x": ["done"]}

    def reader() -> None:
        for event in _stream(_graph(node)):
            out.append(event)
            out[0].set()

    worker = threading.Thread(target=reader)
    worker.start()
    worker.join()
    assert out[1:] == ["before", True]


def test_closing_the_stream_mid_step_lets_the_task_finish() -> None:
    log: list[str] = []

    def node(state: S) -> dict[str, Any]:
        writer = get_stream_writer()
        writer("first")
        log.append("after first")
        writer("second")
        log.append("end")
        return {"x": ["done"]}

    stream = _stream(_graph(node))
    assert next(stream) == "first"
    stream.close()  # type: ignore[attr-defined]
    assert log == ["after first", "end"]


def test_events_from_threads_the_task_starts_arrive_in_order() -> None:
    def node(state: S) -> dict[str, Any]:
        writer = get_stream_writer()
        writer("own")
        helper = threading.Thread(target=lambda: [writer(f"thread {i}") for i in range(3)])
        helper.start()
        helper.join()
        writer("own again")
        return {"x": ["done"]}

    assert list(_stream(_graph(node))) == ["own", "thread 0", "thread 1", "thread 2", "own again"]


def test_events_emitted_inside_an_event_loop_the_task_runs_come_out_in_order() -> None:
    """A sync node may run an event loop of its own (``asyncio.run``) and emit from inside it."""

    async def inner(writer: Any) -> None:
        writer("in loop")
        await asyncio.sleep(0)
        writer("still in loop")

    def node(state: S) -> dict[str, Any]:
        writer = get_stream_writer()
        asyncio.run(inner(writer))
        writer("after loop")
        return {"x": ["done"]}

    assert list(_stream(_graph(node))) == ["in loop", "still in loop", "after loop"]


def test_events_from_a_thread_the_node_starts_arrive_while_it_waits() -> None:
    """As LangGraph's: the node waits until the caller has the event its thread emitted."""
    out: list[Any] = []
    received = threading.Event()

    def node(state: S) -> dict[str, Any]:
        writer = get_stream_writer()
        helper = threading.Thread(target=contextvars.copy_context().run, args=(writer, "from a thread"))
        helper.start()
        helper.join()
        out.append(received.wait(60))
        return {"x": ["done"]}

    for event in _stream(_graph(node)):
        out.append(event)
        received.set()
    assert out == ["from a thread", True]


def test_the_task_sees_the_callers_context_variables_and_keeps_its_own() -> None:
    seen: list[str] = []
    received = threading.Event()

    def node(state: S) -> dict[str, Any]:
        seen.append(LABEL.get())
        LABEL.set("set by the node")
        get_stream_writer()("event")
        received.wait(60)
        seen.append(LABEL.get())
        return {"x": ["done"]}

    token = LABEL.set("the caller's")
    try:
        for _ in _stream(_graph(node)):
            seen.append(f"caller: {LABEL.get()}")
            received.set()
    finally:
        LABEL.reset(token)
    assert seen == ["the caller's", "caller: the caller's", "set by the node"]


def test_a_stream_can_be_read_on_another_thread_mid_step() -> None:
    """A web framework may read a sync iterator from changing threads (Starlette's threadpool)."""

    def node(state: S) -> dict[str, Any]:
        writer = get_stream_writer()
        writer(1)
        writer(2)
        return {"x": ["done"]}

    stream = _stream(_graph(node))
    rest: list[Any] = []
    first = next(stream)
    other = threading.Thread(target=lambda: rest.extend(stream))
    other.start()
    other.join()
    assert [first, *rest] == [1, 2]
