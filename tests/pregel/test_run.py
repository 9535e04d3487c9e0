"""Synchronous runs: node signatures, batch, subgraphs, retries."""

import operator
from typing import Annotated, TypedDict

import pytest

from plait.constants import START
from plait.graph import StateGraph
from plait.runtime import Runtime
from plait.types import RetryPolicy


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def _one(node, **compile_kwargs):
    g = StateGraph(S)
    g.add_node("n", node)
    g.add_edge(START, "n")
    return g.compile(**compile_kwargs)


def test_node_with_config_parameter() -> None:
    def node(state, config):
        return {"log": [config["configurable"]["user"]]}

    assert _one(node).invoke({"x": 0}, {"configurable": {"user": "ann"}})["log"] == ["ann"]


def test_node_with_keyword_only_store() -> None:
    class Store:
        pass

    store = Store()
    seen = []

    def node(state, *, store):
        seen.append(store)

    _one(node, store=store).invoke({"x": 0})
    assert seen == [store]


def test_node_with_runtime_receives_context() -> None:
    seen = []

    def node(state, runtime: Runtime):
        seen.append(runtime.context)

    _one(node).invoke({"x": 0}, context={"tenant": "t1"})
    assert seen == [{"tenant": "t1"}]


def test_node_with_writer_emits_custom_events() -> None:
    def node(state, writer):
        writer({"progress": 1})
        writer({"progress": 2})
        return {"x": 1}

    chunks = list(_one(node).stream({"x": 0}, stream_mode="custom"))
    assert chunks == [{"progress": 1}, {"progress": 2}]


def test_writer_ignored_by_invoke() -> None:
    def node(state, writer):
        writer("ignored")
        return {"x": 1}

    assert _one(node).invoke({"x": 0})["x"] == 1


def test_async_node_with_sync_invoke() -> None:
    async def node(state):
        return {"x": state["x"] + 1}

    assert _one(node).invoke({"x": 1})["x"] == 2


def test_batch() -> None:
    app = _one(lambda s: {"x": s["x"] * 2})
    assert [o["x"] for o in app.batch([{"x": 1}, {"x": 2}, {"x": 3}])] == [2, 4, 6]


def test_batch_with_config_per_input() -> None:
    app = _one(lambda s, config: {"log": [config["configurable"]["k"]]})
    outs = app.batch([{"x": 0}, {"x": 0}], [{"configurable": {"k": "a"}}, {"configurable": {"k": "b"}}])
    assert [o["log"] for o in outs] == [["a"], ["b"]]


def test_compiled_graph_as_node() -> None:
    sub = StateGraph(S)
    sub.add_node("inner", lambda s: {"x": s["x"] + 100, "log": ["inner"]})
    sub.add_edge(START, "inner")

    g = StateGraph(S)
    g.add_node("before", lambda s: {"log": ["before"]})
    g.add_node("sub", sub.compile())
    g.add_edge(START, "before")
    g.add_edge("before", "sub")
    out = g.compile().invoke({"x": 1})
    assert out["x"] == 101
    assert out["log"] == ["before", "before", "inner"]  # subgraph output goes through the reducer


def test_subgraph_with_different_schema_via_wrapper() -> None:
    class Inner(TypedDict):
        text: str

    sub = StateGraph(Inner)
    sub.add_node("shout", lambda s: {"text": s["text"].upper()})
    sub.add_edge(START, "shout")
    inner = sub.compile()

    class Outer(TypedDict):
        msg: str

    g = StateGraph(Outer)
    g.add_node("call", lambda s: {"msg": inner.invoke({"text": s["msg"]})["text"]})
    g.add_edge(START, "call")
    assert g.compile().invoke({"msg": "hi"}) == {"msg": "HI"}


def test_retry_policy_retries_flaky_node() -> None:
    attempts = []

    def flaky(state):
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("flaky")
        return {"x": len(attempts)}

    g = StateGraph(S)
    g.add_node("n", flaky, retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False))
    g.add_edge(START, "n")
    assert g.compile().invoke({"x": 0})["x"] == 3


def test_retry_policy_gives_up_after_max_attempts() -> None:
    attempts = []

    def always(state):
        attempts.append(1)
        raise ConnectionError("down")

    g = StateGraph(S)
    g.add_node("n", always, retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.001, jitter=False))
    g.add_edge(START, "n")
    with pytest.raises(ConnectionError):
        g.compile().invoke({"x": 0})
    assert len(attempts) == 2


def test_retry_policy_does_not_retry_other_exceptions() -> None:
    attempts = []

    def bad(state):
        attempts.append(1)
        raise KeyError("x")

    g = StateGraph(S)
    g.add_node("n", bad, retry_policy=RetryPolicy(retry_on=ConnectionError, initial_interval=0.001))
    g.add_edge(START, "n")
    with pytest.raises(KeyError):
        g.compile().invoke({"x": 0})
    assert len(attempts) == 1


def test_invoke_with_non_dict_input_fails() -> None:
    with pytest.raises(Exception):  # noqa: B017 - plait raises EmptyInputError, LangGraph differs
        _one(lambda s: None).invoke(5)
