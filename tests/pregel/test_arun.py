"""Asynchronous runs: ainvoke, astream, abatch with sync and async nodes."""

import asyncio
import operator
from typing import Annotated, TypedDict

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


async def test_async_node_with_ainvoke() -> None:
    async def node(state):
        await asyncio.sleep(0)
        return {"x": state["x"] + 1}

    assert (await _graph(("n", node)).ainvoke({"x": 1}))["x"] == 2


async def test_sync_node_with_ainvoke() -> None:
    assert (await _graph(("n", lambda s: {"x": 7})).ainvoke({"x": 0}))["x"] == 7


async def test_async_parallel_nodes_run_concurrently() -> None:
    started = asyncio.Event()

    async def a(state):
        started.set()
        return {"log": ["a"]}

    async def b(state):
        await asyncio.wait_for(started.wait(), 5)
        return {"log": ["b"]}

    assert (await _graph(("b", b), ("a", a)).ainvoke({"x": 0}))["log"] == ["a", "b"]


async def test_mixed_sync_and_async_nodes() -> None:
    async def a(state):
        return {"log": ["a"]}

    out = await _graph(("a", a), ("b", lambda s: {"log": ["b"]})).ainvoke({"x": 0})
    assert out["log"] == ["a", "b"]


async def test_astream_values() -> None:
    async def node(state):
        return {"x": 1}

    chunks = [c async for c in _graph(("n", node)).astream({"x": 0}, stream_mode="values")]
    assert chunks == [{"x": 0, "log": []}, {"x": 1, "log": []}]


async def test_astream_updates() -> None:
    async def node(state):
        return {"x": 1}

    chunks = [c async for c in _graph(("n", node)).astream({"x": 0}, stream_mode="updates")]
    assert chunks == [{"n": {"x": 1}}]


async def test_abatch() -> None:
    async def node(state):
        return {"x": state["x"] + 1}

    outs = await _graph(("n", node)).abatch([{"x": 1}, {"x": 2}])
    assert [o["x"] for o in outs] == [2, 3]


async def test_async_node_exception_propagates() -> None:
    class Boom(Exception):
        pass

    async def node(state):
        raise Boom

    import pytest

    with pytest.raises(Boom):
        await _graph(("n", node)).ainvoke({"x": 0})


async def test_async_writer_custom_events() -> None:
    async def node(state, writer):
        writer("hello")
        return {"x": 1}

    chunks = [c async for c in _graph(("n", node)).astream({"x": 0}, stream_mode="custom")]
    assert chunks == ["hello"]
