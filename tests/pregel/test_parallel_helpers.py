"""A sync run's parallel step: its pool helpers start one by one, yet blocking tasks all run at
once, up to ``max_concurrency``; a forked child makes threads of its own."""

from __future__ import annotations

import operator
import os
import signal
import threading
from typing import Annotated, Any, TypedDict

import pytest

from plait.config import get_stream_writer
from plait.graph import START, StateGraph
from plait.types import Send

HANG = 60  # seconds: a hang guard only


class Items(TypedDict):
    items: list[int]
    done: Annotated[list[int], operator.add]


def _fan_out(work: Any) -> Any:
    def fan(state: Items) -> list[Send]:
        return [Send("work", {"n": n}) for n in state["items"]]

    builder = StateGraph(Items).add_node("work", work)
    builder.add_conditional_edges(START, fan, ["work"])
    return builder.compile()


def test_sixty_four_blocking_sends_all_run_at_once() -> None:
    barrier = threading.Barrier(64, timeout=HANG)

    def work(arg: dict[str, int]) -> dict[str, list[int]]:
        barrier.wait()  # breaks (and fails the run) unless all 64 are running
        return {"done": [arg["n"]]}

    out = _fan_out(work).invoke({"items": list(range(64)), "done": []})
    assert sorted(out["done"]) == list(range(64))


def test_max_concurrency_blocking_tasks_run_exactly_that_many_at_once() -> None:
    barrier = threading.Barrier(4, timeout=HANG)
    lock = threading.Lock()
    running, peak = [0], [0]

    def work(arg: dict[str, int]) -> dict[str, list[int]]:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        barrier.wait()  # groups of 4: needs 4 at once
        with lock:
            running[0] -= 1
        return {"done": [arg["n"]]}

    out = _fan_out(work).invoke({"items": list(range(20)), "done": []}, {"max_concurrency": 4})
    assert sorted(out["done"]) == list(range(20)) and peak[0] == 4


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_streams_and_fans_out_on_threads_of_its_own() -> None:
    def quick(arg: dict[str, int]) -> dict[str, list[int]]:
        get_stream_writer()(arg["n"])
        return {"done": [arg["n"]]}

    graph = _fan_out(quick)
    single = StateGraph(Items).add_node("work", lambda s: quick({"n": 7})).add_edge(START, "work").compile()

    def both() -> list[Any]:  # a parallel step (pool helpers) and a live stream (a runner thread)
        out = graph.invoke({"items": list(range(8)), "done": []})
        return [sorted(out["done"]), list(single.stream({"items": [], "done": []}, stream_mode="custom"))]

    expected = both()  # the parent has its pool and runner threads now
    assert expected == [list(range(8)), [7]]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a hang ends it (SIGALRM) instead of the test run
        signal.alarm(HANG)
        try:
            os.write(write, repr(both()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        assert pipe.read() == repr(expected)
    os.waitpid(pid, 0)
