"""A sync run's parallel step: its pool helpers start one by one, yet blocking tasks all run at
once, up to ``max_concurrency``."""

from __future__ import annotations

import operator
import threading
from typing import Annotated, Any, TypedDict

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
