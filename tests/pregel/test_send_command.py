"""Send fan-out and Command routing inside runs, on both drivers."""

import operator
from typing import Annotated, Literal, TypedDict

from plait.constants import END, START
from plait.graph import StateGraph
from plait.types import Command, Send


class S(TypedDict):
    items: list
    results: Annotated[list, operator.add]


def test_send_each_task_gets_its_own_arg(driver) -> None:
    seen = []

    def work(arg):
        seen.append(arg)
        return {"results": [arg]}

    g = StateGraph(S)
    g.add_node("work", work)
    g.add_conditional_edges(START, lambda s: [Send("work", i) for i in s["items"]])
    out = driver.invoke(g.compile(), {"items": [3, 1, 2]})
    assert sorted(seen) == [1, 2, 3]
    assert sorted(out["results"]) == [1, 2, 3]


def test_send_results_follow_send_order(driver) -> None:
    g = StateGraph(S)
    g.add_node("work", lambda a: {"results": [a]})
    g.add_conditional_edges(START, lambda s: [Send("work", i) for i in s["items"]])
    assert driver.invoke(g.compile(), {"items": [3, 1, 2]})["results"] == [3, 1, 2]


def test_send_zero_items_runs_nothing(driver) -> None:
    g = StateGraph(S)
    g.add_node("work", lambda a: {"results": [a]})
    g.add_conditional_edges(START, lambda s: [Send("work", i) for i in s["items"]])
    assert driver.invoke(g.compile(), {"items": []}) == {"items": [], "results": []}


def test_command_loop_until_done(driver) -> None:
    def step(state) -> Command[Literal["step", "__end__"]]:
        n = len(state["results"])
        return Command(update={"results": [n]}, goto="step" if n < 3 else END)

    g = StateGraph(S)
    g.add_node("step", step)
    g.add_edge(START, "step")
    assert driver.invoke(g.compile(), {"items": []})["results"] == [0, 1, 2, 3]


def test_command_goto_send(driver) -> None:
    def fan(state):
        return Command(goto=[Send("work", x) for x in state["items"]])

    g = StateGraph(S)
    g.add_node("fan", fan)
    g.add_node("work", lambda a: {"results": [a * 10]})
    g.add_edge(START, "fan")
    assert sorted(driver.invoke(g.compile(), {"items": [1, 2]})["results"]) == [10, 20]


def test_command_update_only_follows_static_edges(driver) -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: Command(update={"results": ["a"]}))
    g.add_node("b", lambda s: {"results": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    assert driver.invoke(g.compile(), {"items": []})["results"] == ["a", "b"]
