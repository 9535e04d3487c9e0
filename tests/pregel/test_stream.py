"""``stream`` modes, on both drivers: values, updates, custom, debug, and lists of modes."""

import operator
from typing import Annotated, TypedDict

import pytest

from plait.constants import START
from plait.graph import StateGraph


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def _app(**kw):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": s["x"] + 1, "log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(**kw)


def test_default_stream_mode_is_updates_like_langgraph(driver) -> None:
    assert driver.stream(_app(), {"x": 0}) == driver.stream(_app(), {"x": 0}, stream_mode="updates")


def test_stream_mode_none_is_updates_for_state_graphs(driver) -> None:
    updates = driver.stream(_app(), {"x": 0}, stream_mode="updates")
    assert driver.stream(_app(), {"x": 0}, stream_mode=None) == updates


def test_stream_values_includes_input_and_each_step(driver) -> None:
    assert driver.stream(_app(), {"x": 0}, stream_mode="values") == [
        {"x": 0, "log": []},
        {"x": 1, "log": ["a"]},
        {"x": 1, "log": ["a", "b"]},
    ]


def test_stream_updates_per_node(driver) -> None:
    assert driver.stream(_app(), {"x": 0}, stream_mode="updates") == [
        {"a": {"x": 1, "log": ["a"]}},
        {"b": {"log": ["b"]}},
    ]


@pytest.mark.parametrize("result", [None, {}], ids=["none", "empty dict"])
def test_stream_updates_node_writing_nothing(driver, result) -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: result)
    g.add_edge(START, "a")
    assert driver.stream(g.compile(), {"x": 0}, stream_mode="updates") == [{"a": None}]


def test_stream_updates_parallel_nodes_each_reported(driver) -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    chunks = driver.stream(g.compile(), {"x": 0}, stream_mode="updates")
    assert sorted(chunks, key=lambda c: next(iter(c))) == [{"a": {"log": ["a"]}}, {"b": {"log": ["b"]}}]


def test_stream_list_of_modes_yields_tuples(driver) -> None:
    chunks = driver.stream(_app(), {"x": 0}, stream_mode=["updates", "values"])
    assert all(isinstance(c, tuple) and len(c) == 2 for c in chunks)
    assert [p for m, p in chunks if m == "updates"] == [{"a": {"x": 1, "log": ["a"]}}, {"b": {"log": ["b"]}}]
    assert [p for m, p in chunks if m == "values"][-1] == {"x": 1, "log": ["a", "b"]}


def test_stream_custom_and_updates_together(driver) -> None:
    def node(state, writer):
        writer({"tick": 1})
        return {"x": 9}

    g = StateGraph(S)
    g.add_node("n", node)
    g.add_edge(START, "n")
    chunks = driver.stream(g.compile(), {"x": 0}, stream_mode=["custom", "updates"])
    assert chunks == [("custom", {"tick": 1}), ("updates", {"n": {"x": 9}})]


def test_stream_debug_yields_dict_events(driver, saver, thread) -> None:
    chunks = driver.stream(_app(checkpointer=saver), {"x": 0}, thread, stream_mode="debug")
    assert chunks
    assert all(isinstance(c, dict) and "type" in c and "step" in c for c in chunks)


def test_unknown_stream_mode_rejected(driver) -> None:
    with pytest.raises(ValueError):
        driver.stream(_app(), {"x": 0}, stream_mode="bogus")


def test_invoke_with_stream_mode_updates_returns_all_chunks(driver) -> None:
    assert driver.invoke(_app(), {"x": 0}, stream_mode="updates") == [
        {"a": {"x": 1, "log": ["a"]}},
        {"b": {"log": ["b"]}},
    ]
