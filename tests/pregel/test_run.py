"""Runs on both drivers: node signatures, sync and async nodes, batch, subgraphs, retries."""

import asyncio
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


def test_node_with_config_parameter(driver) -> None:
    def node(state, config):
        return {"log": [config["configurable"]["user"]]}

    assert driver.invoke(_one(node), {"x": 0}, {"configurable": {"user": "ann"}})["log"] == ["ann"]


def test_node_with_keyword_only_store(driver) -> None:
    class Store:
        pass

    store = Store()
    seen = []

    def node(state, *, store):
        seen.append(store)

    driver.invoke(_one(node, store=store), {"x": 0})
    assert seen == [store]


def test_node_with_runtime_receives_context(driver) -> None:
    seen = []

    def node(state, runtime: Runtime):
        seen.append(runtime.context)

    driver.invoke(_one(node), {"x": 0}, context={"tenant": "t1"})
    assert seen == [{"tenant": "t1"}]


def _writer_node(kind: str, *events):
    def node(state, writer):
        for event in events:
            writer(event)
        return {"x": 1}

    async def anode(state, writer):
        for event in events:
            writer(event)
        return {"x": 1}

    return node if kind == "def" else anode


@pytest.mark.parametrize("kind", ["def", "async_def"])
def test_node_with_writer_emits_custom_events(driver, kind: str) -> None:
    node = _writer_node(kind, {"progress": 1}, {"progress": 2})
    assert driver.stream(_one(node), {"x": 0}, stream_mode="custom") == [{"progress": 1}, {"progress": 2}]


@pytest.mark.parametrize("kind", ["def", "async_def"])
def test_writer_ignored_by_invoke(driver, kind: str) -> None:
    assert driver.invoke(_one(_writer_node(kind, "ignored")), {"x": 0})["x"] == 1


def test_async_node(driver) -> None:
    async def node(state):
        await asyncio.sleep(0)
        return {"x": state["x"] + 1}

    assert driver.invoke(_one(node), {"x": 1})["x"] == 2


def test_batch(driver) -> None:
    async def node(state):
        return {"x": state["x"] + 1}

    app = _one(lambda s: {"x": s["x"] * 2})
    assert [o["x"] for o in driver.batch(app, [{"x": 1}, {"x": 2}, {"x": 3}])] == [2, 4, 6]
    assert [o["x"] for o in driver.batch(_one(node), [{"x": 1}, {"x": 2}])] == [2, 3]


def test_batch_with_config_per_input(driver) -> None:
    app = _one(lambda s, config: {"log": [config["configurable"]["k"]]})
    outs = driver.batch(
        app, [{"x": 0}, {"x": 0}], [{"configurable": {"k": "a"}}, {"configurable": {"k": "b"}}]
    )
    assert [o["log"] for o in outs] == [["a"], ["b"]]


def test_compiled_graph_as_node(driver) -> None:
    sub = StateGraph(S)
    sub.add_node("inner", lambda s: {"x": s["x"] + 100, "log": ["inner"]})
    sub.add_edge(START, "inner")

    g = StateGraph(S)
    g.add_node("before", lambda s: {"log": ["before"]})
    g.add_node("sub", sub.compile())
    g.add_edge(START, "before")
    g.add_edge("before", "sub")
    out = driver.invoke(g.compile(), {"x": 1})
    assert out["x"] == 101
    assert out["log"] == ["before", "before", "inner"]  # subgraph output goes through the reducer


def test_subgraph_with_different_schema_via_wrapper(driver) -> None:
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
    assert driver.invoke(g.compile(), {"msg": "hi"}) == {"msg": "HI"}


def test_retry_policy_retries_flaky_node(driver) -> None:
    attempts = []

    def flaky(state):
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("flaky")
        return {"x": len(attempts)}

    g = StateGraph(S)
    g.add_node("n", flaky, retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False))
    g.add_edge(START, "n")
    assert driver.invoke(g.compile(), {"x": 0})["x"] == 3


def test_retry_policy_gives_up_after_max_attempts(driver) -> None:
    attempts = []

    def always(state):
        attempts.append(1)
        raise ConnectionError("down")

    g = StateGraph(S)
    g.add_node("n", always, retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.001, jitter=False))
    g.add_edge(START, "n")
    with pytest.raises(ConnectionError):
        driver.invoke(g.compile(), {"x": 0})
    assert len(attempts) == 2


def test_retry_policy_does_not_retry_other_exceptions(driver) -> None:
    attempts = []

    def bad(state):
        attempts.append(1)
        raise KeyError("x")

    g = StateGraph(S)
    g.add_node("n", bad, retry_policy=RetryPolicy(retry_on=ConnectionError, initial_interval=0.001))
    g.add_edge(START, "n")
    with pytest.raises(KeyError):
        driver.invoke(g.compile(), {"x": 0})
    assert len(attempts) == 1


def test_invoke_with_non_dict_input_fails(driver) -> None:
    with pytest.raises(Exception):  # noqa: B017 - plait raises EmptyInputError, LangGraph differs
        driver.invoke(_one(lambda s: None), 5)
