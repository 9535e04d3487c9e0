"""An input that cannot be stored stores nothing, on every saver: no input checkpoint without its input."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from plait.constants import START
from plait.errors import SerializationError
from plait.graph import StateGraph


class Opaque:
    """Not data: plait refuses to store it."""


class State(TypedDict):
    n: int
    obj: Any


def _counter() -> StateGraph:
    return StateGraph(State).add_node("count", lambda s: {"n": s["n"] + 1}).add_edge(START, "count")


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_an_input_that_cannot_be_stored_stores_nothing(saver: Any, driver: Any, durability: str) -> None:
    # the input checkpoint and its writes are separate calls: the input is checked before either is made,
    # or the thread would end with an input checkpoint without its input, which invoke(None) would run
    graph = _counter().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    driver.invoke(graph, {"n": 0, "obj": 1}, config, durability=durability)
    before = [s.config for s in graph.get_state_history(config)]
    with pytest.raises(SerializationError) as info:
        driver.invoke(graph, {"n": 5, "obj": Opaque()}, config, durability=durability)
    assert info.value.key == "obj" and "written by the graph input" in str(info.value)
    assert [s.config for s in graph.get_state_history(config)] == before
    assert driver.invoke(graph, None, config) == {"n": 1, "obj": 1}, "nothing left to run"
    assert [s.config for s in graph.get_state_history(config)] == before


def test_update_state_as_input_that_cannot_be_stored_stores_nothing(saver: Any) -> None:
    graph = _counter().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"n": 0}, config)
    before = [s.config for s in graph.get_state_history(config)]
    with pytest.raises(SerializationError, match="Cannot store write to 'obj'"):
        graph.update_state(config, {"obj": Opaque()}, as_node="__input__")
    assert [s.config for s in graph.get_state_history(config)] == before
    assert graph.get_state(config).next == ()


def test_a_subgraph_called_with_an_input_that_cannot_be_stored_stores_nothing(saver: Any) -> None:
    class Sub(TypedDict):
        v: Any

    sub = StateGraph(Sub).add_node("s", lambda s: {}).add_edge(START, "s").compile()

    def node(state: State) -> dict:
        sub.invoke({"v": Opaque()})  # a node's own input to the subgraph, not the parent's state
        return {"n": 1}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node").compile(checkpointer=saver)
    with pytest.raises(SerializationError, match="Cannot store write to 'v'"):
        graph.invoke({"n": 0}, {"configurable": {"thread_id": "t"}})
    assert {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)} == {""}, (
        "no subgraph checkpoint"
    )
