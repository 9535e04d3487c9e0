"""A value that cannot be stored fails the step that produced it, naming node and key; nothing stored is lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from _pg import pg_saver

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import SerializationError
from plait.graph import END, START, StateGraph


class Opaque:
    """Not data: plait refuses to store it."""


class State(TypedDict):
    n: int
    obj: Any


def test_unserializable_value_names_node_key_and_keeps_the_thread(tmp_path: Path, driver: Any) -> None:
    def count(state: State) -> dict:
        return {"n": state["n"] + 1}

    def maker(state: State) -> dict:
        return {"obj": Opaque(), "n": state["n"] + 1}

    builder = StateGraph(State).add_node("count", count).add_node("maker", maker)
    builder.add_edge(START, "count").add_edge("count", "maker").add_edge("maker", END)
    with SqliteSaver.from_conn_string(str(tmp_path / "t.db")) as saver:
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        with pytest.raises(SerializationError) as info:
            driver.invoke(graph, {"n": 0}, config)
        err = info.value
        assert (err.node, err.key) == ("maker", "obj")
        assert "Opaque" in str(err) and "written by node 'maker' at step 2" in str(err)
        snapshot = driver.get_state(graph, config)
        assert snapshot.values == {"n": 1} and snapshot.next == ("maker",), "the last good step is kept"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        with SqliteSaver.from_conn_string(tmp_path / "cp.db") as saver:
            yield saver
    else:
        yield from pg_saver("plait_save_errors")


def _counter() -> StateGraph:
    return StateGraph(State).add_node("count", lambda s: {"n": s["n"] + 1}).add_edge(START, "count")


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_an_input_that_cannot_be_stored_stores_nothing(any_saver: Any, driver: Any, durability: str) -> None:
    # the input checkpoint and its writes are separate calls: the input is checked before either is made,
    # or the thread would end with an input checkpoint without its input, which invoke(None) would run
    graph = _counter().compile(checkpointer=any_saver)
    config = {"configurable": {"thread_id": "t"}}
    driver.invoke(graph, {"n": 0, "obj": 1}, config, durability=durability)
    before = [s.config for s in graph.get_state_history(config)]
    with pytest.raises(SerializationError) as info:
        driver.invoke(graph, {"n": 5, "obj": Opaque()}, config, durability=durability)
    assert info.value.key == "obj" and "written by the graph input" in str(info.value)
    assert [s.config for s in graph.get_state_history(config)] == before
    assert driver.invoke(graph, None, config) == {"n": 1, "obj": 1}, "nothing left to run"
    assert [s.config for s in graph.get_state_history(config)] == before


def test_update_state_as_input_that_cannot_be_stored_stores_nothing(any_saver: Any) -> None:
    graph = _counter().compile(checkpointer=any_saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"n": 0}, config)
    before = [s.config for s in graph.get_state_history(config)]
    with pytest.raises(SerializationError, match="Cannot store write to 'obj'"):
        graph.update_state(config, {"obj": Opaque()}, as_node="__input__")
    assert [s.config for s in graph.get_state_history(config)] == before
    assert graph.get_state(config).next == ()
