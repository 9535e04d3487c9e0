"""Deferred nodes run once, after everything else scheduled."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, StateGraph
from plait.types import Command, interrupt


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _node(name: str) -> Any:
    return lambda state: {"x": [name]}


def _fan_out(**kwargs: Any) -> Any:
    builder = StateGraph(S)
    for name in ("a", "b1", "b2", "c"):
        builder.add_node(name, _node(name))
    builder.add_node("agg", _node("agg"), defer=True)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b1")
    builder.add_edge("a", "b2")
    builder.add_edge("b2", "c")  # a longer branch: agg waits for it
    builder.add_edge("b1", "agg")
    builder.add_edge("c", "agg")
    builder.add_edge("agg", END)
    return builder.compile(**kwargs)


def test_a_deferred_node_waits_for_the_longer_branch_and_runs_once(driver: Any) -> None:
    assert driver.invoke(_fan_out(), {"x": []}) == {"x": ["a", "b1", "b2", "c", "agg"]}


def test_without_defer_the_node_runs_per_branch(driver: Any) -> None:
    builder = StateGraph(S)
    for name in ("a", "b1", "b2", "c", "agg"):
        builder.add_node(name, _node(name))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b1")
    builder.add_edge("a", "b2")
    builder.add_edge("b2", "c")
    builder.add_edge("b1", "agg")
    builder.add_edge("c", "agg")
    assert driver.invoke(builder.compile(), {"x": []})["x"].count("agg") == 2


def test_a_held_deferred_node_survives_an_interrupt(driver: Any) -> None:
    def ask(state: S) -> dict[str, Any]:
        return {"x": [f"c:{interrupt('ok?')}"]}

    builder = StateGraph(S)
    for name in ("a", "b1", "b2"):
        builder.add_node(name, _node(name))
    builder.add_node("c", ask)
    builder.add_node("agg", _node("agg"), defer=True)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b1")
    builder.add_edge("a", "b2")
    builder.add_edge("b2", "c")
    builder.add_edge("b1", "agg")
    builder.add_edge("c", "agg")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "d"}}
    assert "__interrupt__" in driver.invoke(graph, {"x": []}, config)
    assert driver.invoke(graph, Command(resume="yes"), config) == {"x": ["a", "b1", "b2", "c:yes", "agg"]}


def test_unknown_add_node_options_are_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        StateGraph(S).add_node("a", _node("a"), deferred=True)
