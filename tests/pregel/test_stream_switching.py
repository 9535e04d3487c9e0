"""A sync stream read on the main thread runs a one-task step in a greenlet on that thread: each
event the task emits goes to the caller before the task goes on (pregel/_live.py)."""

from __future__ import annotations

import asyncio
import contextvars
import operator
import signal
import threading
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from greenlet import greenlet
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


def test_each_event_reaches_the_caller_before_the_task_goes_on() -> None:
    log: list[str] = []

    def node(state: S) -> dict[str, Any]:
        log.append(f"node on {threading.current_thread().name}")
        writer = get_stream_writer()
        for i in range(3):
            writer(i)
            log.append(f"after {i}")
        return {"x": ["done"]}

    for event in _stream(_graph(node)):
        log.append(f"got {event}")
    main = threading.main_thread().name
    assert log == [f"node on {main}", "got 0", "after 0", "got 1", "after 1", "got 2", "after 2"]


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


def test_ctrl_c_while_the_task_runs_stops_the_task() -> None:
    """The task runs on the main thread, where Python delivers Ctrl-C: it stops there (a runner
    thread would have left it running)."""
    log: list[str] = []

    def node(state: S) -> dict[str, Any]:
        try:
            get_stream_writer()("first")
            signal.raise_signal(signal.SIGINT)
            log.append("went on")
        finally:
            log.append("unwound")
        return {"x": ["done"]}

    seen: list[Any] = []
    with pytest.raises(KeyboardInterrupt):
        seen.extend(_stream(_graph(node)))
    assert log == ["unwound"]


def test_the_task_sees_the_callers_context_variables_and_keeps_its_own() -> None:
    seen: list[str] = []

    def node(state: S) -> dict[str, Any]:
        seen.append(LABEL.get())
        LABEL.set("set by the node")
        get_stream_writer()("event")
        seen.append(LABEL.get())
        return {"x": ["done"]}

    token = LABEL.set("the caller's")
    try:
        for _ in _stream(_graph(node)):
            seen.append(f"caller: {LABEL.get()}")
    finally:
        LABEL.reset(token)
    assert seen == ["the caller's", "caller: the caller's", "set by the node"]


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


def test_events_emitted_inside_an_event_loop_the_task_runs_wait_for_it() -> None:
    """A task's own ``asyncio.run`` holds this thread's running loop: its events are streamed once
    the loop is done, not from inside it."""

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


def test_a_stream_read_from_a_greenlet_switches_back_to_it() -> None:
    def node(state: S) -> dict[str, Any]:
        writer = get_stream_writer()
        writer(1)
        writer(2)
        return {"x": ["done"]}

    stream = _stream(_graph(node))
    first = greenlet(lambda: next(stream)).switch()
    rest = greenlet(lambda: list(stream)).switch()
    assert (first, rest) == (1, [2])


def test_reading_a_switching_stream_on_another_thread_mid_step_is_refused() -> None:
    def node(state: S) -> dict[str, Any]:
        writer = get_stream_writer()
        writer(1)
        writer(2)
        return {"x": ["done"]}

    stream = _stream(_graph(node))
    assert next(stream) == 1
    failed: list[BaseException] = []

    def elsewhere() -> None:
        try:
            next(stream)
        except RuntimeError as exc:
            failed.append(exc)

    other = threading.Thread(target=elsewhere)
    other.start()
    other.join()
    assert len(failed) == 1
    assert "read a sync stream on one thread, or use astream()" in str(failed[0])
