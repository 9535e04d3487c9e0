"""Async nodes, on both drivers (the sync driver runs them on a private loop), and async-only concurrency."""

import asyncio
import operator
from typing import Annotated, TypedDict

import pytest

from plait.constants import START
from plait.graph import StateGraph


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def _graph(*nodes):
    g = StateGraph(S)
    for name, fn in nodes:
        g.add_node(name, fn)
        g.add_edge(START, name)
    return g.compile()


def test_sync_node(driver) -> None:
    assert driver.invoke(_graph(("n", lambda s: {"x": 7})), {"x": 0})["x"] == 7


async def test_async_parallel_nodes_run_concurrently() -> None:
    # async-driver only: the nodes share asyncio primitives bound to the caller's running loop
    started = asyncio.Event()

    async def a(state):
        started.set()
        return {"log": ["a"]}

    async def b(state):
        await asyncio.wait_for(started.wait(), 60)
        return {"log": ["b"]}

    assert (await _graph(("b", b), ("a", a)).ainvoke({"x": 0}))["log"] == ["a", "b"]


def test_mixed_sync_and_async_nodes(driver) -> None:
    async def a(state):
        return {"log": ["a"]}

    out = driver.invoke(_graph(("a", a), ("b", lambda s: {"log": ["b"]})), {"x": 0})
    assert out["log"] == ["a", "b"]


def test_stream_values_of_async_node(driver) -> None:
    async def node(state):
        return {"x": 1}

    chunks = driver.stream(_graph(("n", node)), {"x": 0}, stream_mode="values")
    assert chunks == [{"x": 0, "log": []}, {"x": 1, "log": []}]


def test_stream_updates_of_async_node(driver) -> None:
    async def node(state):
        return {"x": 1}

    chunks = driver.stream(_graph(("n", node)), {"x": 0}, stream_mode="updates")
    assert chunks == [{"n": {"x": 1}}]


def test_async_node_exception_propagates(driver) -> None:
    class Boom(Exception):
        pass

    async def node(state):
        raise Boom

    with pytest.raises(Boom):
        driver.invoke(_graph(("n", node)), {"x": 0})
