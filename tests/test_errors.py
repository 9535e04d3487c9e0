"""Errors raised while running graphs: LangGraph's wording plus plait's fields."""

import operator
from typing import Annotated, TypedDict

import pytest

from plait.constants import END, START
from plait.errors import GraphRecursionError, InvalidUpdateError
from plait.graph import StateGraph

TWO_WRITES = (
    "At key 'x': Can receive only one value per step. Use an Annotated key to handle multiple values.\n"
    "For troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CONCURRENT_GRAPH_UPDATE"
)
RECURSION = (
    "Recursion limit of {n} reached without hitting a stop condition. You can increase the limit by setting "
    "the `recursion_limit` config key.\n"
    "For troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/GRAPH_RECURSION_LIMIT"
)


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def _two_writers():
    g = StateGraph(S)
    g.add_node("b", lambda s: {"x": 2})
    g.add_node("a", lambda s: {"x": 1})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    return g.compile()


def test_two_writes_without_reducer_message() -> None:
    with pytest.raises(InvalidUpdateError) as info:
        _two_writers().invoke({"x": 0})
    assert str(info.value) == TWO_WRITES


def test_two_writes_error_fields() -> None:
    with pytest.raises(InvalidUpdateError) as info:
        _two_writers().invoke({"x": 0})
    assert info.value.key == "x"
    assert info.value.nodes == ("a", "b")


def test_two_writes_same_value_still_error() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": 1})
    g.add_node("b", lambda s: {"x": 1})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    with pytest.raises(InvalidUpdateError):
        g.compile().invoke({"x": 0})


def test_node_returning_str() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: "hi")
    g.add_edge(START, "a")
    with pytest.raises(InvalidUpdateError) as info:
        g.compile().invoke({"x": 0})
    assert str(info.value) == (
        "Expected dict, got hi\n"
        "For troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_GRAPH_NODE_RETURN_VALUE"
    )
    assert info.value.node == "a"


def test_node_returning_list_of_str() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: ["x"])
    g.add_edge(START, "a")
    with pytest.raises(InvalidUpdateError, match="^Expected dict, got"):
        g.compile().invoke({"x": 0})


def test_node_returning_none_is_no_update() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: None)
    g.add_edge(START, "a")
    assert g.compile().invoke({"x": 4}) == {"x": 4, "log": []}


def test_node_returning_empty_dict_is_no_update() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {})
    g.add_edge(START, "a")
    assert g.compile().invoke({"x": 4}) == {"x": 4, "log": []}


def test_node_exception_propagates_unchanged() -> None:
    err = KeyError("boom")

    def bad(s):
        raise err

    g = StateGraph(S)
    g.add_node("a", bad)
    g.add_edge(START, "a")
    with pytest.raises(KeyError) as info:
        g.compile().invoke({"x": 0})
    assert info.value is err


def _looping():
    g = StateGraph(S)
    g.add_node("inc", lambda s: {"x": s["x"] + 1})
    g.add_edge(START, "inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["x"] < s.get("stop", 10**9) else END)
    return g.compile()


def test_recursion_limit_message() -> None:
    with pytest.raises(GraphRecursionError) as info:
        _looping().invoke({"x": 0}, {"recursion_limit": 5})
    assert str(info.value) == RECURSION.format(n=5)


def test_recursion_error_is_recursion_error() -> None:
    with pytest.raises(RecursionError):
        _looping().invoke({"x": 0}, {"recursion_limit": 3})


def _chain(n: int):
    g = StateGraph(S)
    names = [f"n{i}" for i in range(n)]
    g.add_sequence([(name, lambda s: {"x": s["x"] + 1}) for name in names])
    g.add_edge(START, names[0])
    return g.compile()


@pytest.mark.parametrize("limit", [2, 3, 4, 10])
def test_recursion_limit_allows_limit_minus_one_node_steps(limit: int) -> None:
    # LangGraph counts the input step too: a chain of `limit - 1` nodes finishes
    assert _chain(limit - 1).invoke({"x": 0}, {"recursion_limit": limit})["x"] == limit - 1


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 10])
def test_recursion_limit_reached_by_chain_of_limit_nodes(limit: int) -> None:
    with pytest.raises(GraphRecursionError) as info:
        _chain(limit).invoke({"x": 0}, {"recursion_limit": limit})
    assert str(info.value) == RECURSION.format(n=limit)


def test_explicit_recursion_limit_of_25() -> None:
    assert _chain(24).invoke({"x": 0}, {"recursion_limit": 25})["x"] == 24
    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        _chain(25).invoke({"x": 0}, {"recursion_limit": 25})


def test_default_recursion_limit_matches_reference() -> None:
    assert _chain(30).invoke({"x": 0})["x"] == 30


def test_invalid_update_error_picklable() -> None:
    import pickle

    err = InvalidUpdateError("m", node="a", key="x", value=1, step=2, nodes=("a", "b"))
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.node, back.key, back.value, back.step, back.nodes) == (
        "m",
        "a",
        "x",
        1,
        2,
        ("a", "b"),
    )
