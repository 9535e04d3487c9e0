"""Building and compiling graphs: validation errors, naming, sequences, entry/finish points."""

import operator
from typing import Annotated, TypedDict

import pytest

from plait.constants import END, START
from plait.errors import GraphBuildError
from plait.graph import StateGraph


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def inc(state: S) -> dict:
    return {"x": state["x"] + 1}


def _graph() -> StateGraph:
    return StateGraph(S)


def test_no_entry_point() -> None:
    g = _graph()
    g.add_node("a", inc)
    with pytest.raises(
        ValueError, match="^Graph must have an entrypoint: add at least one edge from START to another node$"
    ):
        g.compile()


def test_edge_to_unknown_node() -> None:
    g = _graph()
    g.add_node("a", inc)
    g.add_edge(START, "a")
    g.add_edge("a", "zz")
    with pytest.raises(ValueError, match="^Found edge ending at unknown node `zz`$"):
        g.compile()


def test_edge_from_unknown_node() -> None:
    g = _graph()
    g.add_node("a", inc)
    g.add_edge(START, "a")
    g.add_edge("zz", "a")
    with pytest.raises(ValueError, match="^Found edge starting at unknown node 'zz'$"):
        g.compile()


def test_waiting_edge_from_unknown_node() -> None:
    g = _graph()
    g.add_node("a", inc)
    g.add_node("c", inc)
    g.add_edge(START, "a")
    g.add_edge(["a", "zz"], "c")
    with pytest.raises(ValueError, match="zz"):
        g.compile()


def test_duplicate_node() -> None:
    g = _graph()
    g.add_node("a", inc)
    with pytest.raises(ValueError, match="^Node `a` already present.$"):
        g.add_node("a", inc)


@pytest.mark.parametrize("name", [START, END])
def test_reserved_node_names(name: str) -> None:
    with pytest.raises(ValueError, match=f"^Node `{name}` is reserved.$"):
        _graph().add_node(name, inc)


def test_colon_in_node_name() -> None:
    with pytest.raises(
        ValueError, match="^':' is a reserved character and is not allowed in the node names.$"
    ):
        _graph().add_node("a:b", inc)


def test_end_as_start_of_edge() -> None:
    with pytest.raises(ValueError, match="^END cannot be a start node$"):
        _graph().add_edge(END, "a")


def test_start_as_end_of_edge() -> None:
    with pytest.raises(ValueError, match="^START cannot be an end node$"):
        _graph().add_edge("a", START)


@pytest.mark.parametrize("kind", ["interrupt_before", "interrupt_after"])
def test_unknown_interrupt_node(kind: str) -> None:
    g = _graph()
    g.add_node("a", inc)
    g.add_edge(START, "a")
    with pytest.raises(ValueError, match="^Interrupt node `zz` not found$"):
        g.compile(**{kind: ["zz"]})


def test_interrupt_star_is_accepted() -> None:
    g = _graph()
    g.add_node("a", inc)
    g.add_edge(START, "a")
    g.compile(interrupt_before="*")


def test_build_errors_are_value_errors() -> None:
    assert issubclass(GraphBuildError, ValueError)


def test_add_node_named_after_function() -> None:
    g = _graph()
    g.add_node(inc)
    g.add_edge(START, "inc")
    assert g.compile().invoke({"x": 1}) == {"x": 2, "log": []}


def test_add_node_from_function_duplicate_name() -> None:
    g = _graph()
    g.add_node(inc)
    with pytest.raises(ValueError, match="^Node `inc` already present.$"):
        g.add_node(inc)


def test_add_node_returns_builder_for_chaining() -> None:
    g = _graph()
    assert g.add_node("a", inc) is g
    assert g.add_edge(START, "a") is g


def test_add_sequence_of_functions() -> None:
    def first(s):
        return {"log": ["first"]}

    def second(s):
        return {"log": ["second"]}

    g = _graph()
    g.add_sequence([first, second])
    g.add_edge(START, "first")
    assert g.compile().invoke({"x": 0})["log"] == ["first", "second"]


def test_add_sequence_of_named_pairs() -> None:
    g = _graph()
    g.add_sequence(
        [("one", lambda s: {"log": [1]}), ("two", lambda s: {"log": [2]}), ("three", lambda s: {"log": [3]})]
    )
    g.set_entry_point("one")
    assert g.compile().invoke({"x": 0})["log"] == [1, 2, 3]


def test_add_sequence_empty_rejected() -> None:
    with pytest.raises(ValueError):
        _graph().add_sequence([])


def test_set_entry_and_finish_point() -> None:
    g = _graph()
    g.add_node("a", inc)
    g.add_node("never", lambda s: {"log": ["never"]})
    g.set_entry_point("a")
    g.set_finish_point("a")
    assert g.compile().invoke({"x": 1}) == {"x": 2, "log": []}


def test_set_conditional_entry_point() -> None:
    g = _graph()
    g.add_node("small", lambda s: {"log": ["small"]})
    g.add_node("big", lambda s: {"log": ["big"]})
    g.set_conditional_entry_point(lambda s: "big" if s["x"] > 10 else "small", ["small", "big"])
    app = g.compile()
    assert app.invoke({"x": 1})["log"] == ["small"]
    assert app.invoke({"x": 50})["log"] == ["big"]


def test_compiled_graph_reusable_across_invocations() -> None:
    g = _graph()
    g.add_node("a", inc)
    g.add_edge(START, "a")
    app = g.compile()
    assert [app.invoke({"x": i})["x"] for i in range(3)] == [1, 2, 3]


def test_node_without_outgoing_edge_ends_run() -> None:
    g = _graph()
    g.add_node("a", inc)
    g.add_edge(START, "a")
    assert g.compile().invoke({"x": 0})["x"] == 1


def test_node_with_two_successors_runs_both_in_next_step() -> None:
    g = _graph()
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_node("c", lambda s: {"log": ["c"]})
    g.add_edge(START, "a")
    g.add_edge("a", "c")
    g.add_edge("a", "b")
    assert g.compile().invoke({"x": 0})["log"] == ["a", "b", "c"]


def test_add_node_with_metadata_and_retry_accepted() -> None:
    from plait.types import RetryPolicy

    g = _graph()
    g.add_node("a", inc, metadata={"k": "v"}, retry_policy=RetryPolicy(max_attempts=2))
    g.add_edge(START, "a")
    assert g.compile().invoke({"x": 0})["x"] == 1
