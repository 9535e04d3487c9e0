"""One superstep, on both drivers: snapshot reads, update validation, step boundaries."""

import operator
import threading
from typing import Annotated, TypedDict

from plait.constants import START
from plait.graph import StateGraph


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def test_parallel_nodes_really_run_concurrently(driver) -> None:
    barrier = threading.Barrier(2, timeout=60)

    def node(name):
        def run(s):
            barrier.wait()
            return {"log": [name]}

        return run

    g = StateGraph(S)
    g.add_node("a", node("a"))
    g.add_node("b", node("b"))
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    assert driver.invoke(g.compile(), {"x": 0})["log"] == ["a", "b"]


def test_next_step_sees_previous_step_writes(driver) -> None:
    seen = []
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": 5})
    g.add_node("b", lambda s: seen.append(s["x"]))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    driver.invoke(g.compile(), {"x": 0})
    assert seen == [5]


def test_node_sees_input_before_any_write(driver) -> None:
    seen = []
    g = StateGraph(S)
    g.add_node("a", lambda s: seen.append(dict(s)))
    g.add_edge(START, "a")
    driver.invoke(g.compile(), {"x": 3, "log": ["i"]})
    assert seen == [{"x": 3, "log": ["i"]}]


def test_successor_reached_twice_in_one_step_runs_once(driver) -> None:
    g = StateGraph(S)
    for n in ("a", "b", "c"):
        g.add_node(n, lambda s, n=n: {"log": [n]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_edge("a", "c")
    g.add_edge("b", "c")
    assert driver.invoke(g.compile(), {"x": 0})["log"] == ["a", "b", "c"]


def test_updates_of_sequential_steps_apply_in_order(driver) -> None:
    g = StateGraph(S)
    g.add_sequence([("a", lambda s: {"x": 1}), ("b", lambda s: {"x": s["x"] * 10})])
    g.add_edge(START, "a")
    assert driver.invoke(g.compile(), {"x": 0})["x"] == 10
