"""A value that cannot be stored fails the step that produced it, naming node and key; nothing stored is lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pytest

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
