"""Events reach the caller while a step runs; subgraphs stream with namespaces; durability modes."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.config import get_stream_writer
from plait.graph import START, StateGraph


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def test_custom_events_arrive_while_the_node_runs() -> None:
    """The node writes "before", then waits until the caller has it: a stream that held events back
    until the node's end would leave it waiting (a minute at most, then it reports so)."""
    received = threading.Event()
    live: list[bool] = []

    def slow(state: S) -> dict[str, Any]:
        writer = get_stream_writer()
        writer("before")
        live.append(received.wait(60))
        writer("after")
        return {"x": ["slow"]}

    graph = StateGraph(S).add_node("slow", slow).add_edge(START, "slow").compile()
    seen = []
    for chunk in graph.stream({"x": []}, stream_mode="custom"):
        seen.append(chunk)
        received.set()
    assert seen == ["before", "after"]
    assert live == [True]  # "before" came out while the node ran


def test_custom_events_arrive_while_an_async_node_runs() -> None:
    live: list[bool] = []

    async def main() -> list[Any]:
        received = asyncio.Event()

        async def slow(state: S) -> dict[str, Any]:
            writer = get_stream_writer()
            writer("before")
            try:
                await asyncio.wait_for(received.wait(), 60)
                live.append(True)
            except asyncio.TimeoutError:
                live.append(False)
            writer("after")
            return {"x": ["slow"]}

        graph = StateGraph(S).add_node("slow", slow).add_edge(START, "slow").compile()
        seen = []
        async for chunk in graph.astream({"x": []}, stream_mode="custom"):
            seen.append(chunk)
            received.set()
        return seen

    assert asyncio.run(main()) == ["before", "after"]
    assert live == [True]


def test_a_failing_node_still_raises_when_streaming_live(driver: Any) -> None:
    def boom(state: S) -> dict[str, Any]:
        get_stream_writer()("about to fail")
        raise ValueError("boom")

    graph = StateGraph(S).add_node("boom", boom).add_edge(START, "boom").compile()
    with pytest.raises(ValueError, match="boom"):
        driver.stream(graph, {"x": []}, stream_mode="custom")


def _graphs(sub_checkpointer: Any = None) -> Any:
    def inner(state: S) -> dict[str, Any]:
        get_stream_writer()({"inner": 1})
        return {"x": ["i"]}

    def outer(state: S) -> dict[str, Any]:
        get_stream_writer()({"outer": 1})
        return {"x": ["o"]}

    sub = (
        StateGraph(S).add_node("inner", inner).add_edge(START, "inner").compile(checkpointer=sub_checkpointer)
    )
    return (
        StateGraph(S)
        .add_node("outer", outer)
        .add_node("sub", sub)
        .add_edge(START, "outer")
        .add_edge("outer", "sub")
        .compile(checkpointer=InMemorySaver())
    )


def test_subgraph_events_carry_their_namespace(driver: Any) -> None:
    graph = _graphs()
    config = {"configurable": {"thread_id": "t"}}
    out = driver.stream(graph, {"x": []}, config, stream_mode=["custom", "updates"], subgraphs=True)
    assert [(ns[:1] and ns[0].split(":")[0], mode, payload) for ns, mode, payload in out] == [
        ((), "custom", {"outer": 1}),
        ((), "updates", {"outer": {"x": ["o"]}}),
        ("sub", "custom", {"inner": 1}),
        ("sub", "updates", {"inner": {"x": ["i"]}}),
        ((), "updates", {"sub": {"x": ["o", "i"]}}),
    ]
    (ns,) = {ns for ns, _, _ in out if ns}
    assert ns[0].startswith("sub:")


def test_without_subgraphs_their_events_stay_inside(driver: Any) -> None:
    graph = _graphs()
    out = driver.stream(graph, {"x": []}, {"configurable": {"thread_id": "t"}}, stream_mode="custom")
    assert out == [{"outer": 1}]


def test_single_mode_with_subgraphs_yields_namespace_and_chunk(driver: Any) -> None:
    graph = _graphs(sub_checkpointer=True)
    out = driver.stream(
        graph, {"x": []}, {"configurable": {"thread_id": "t"}}, stream_mode="values", subgraphs=True
    )
    assert out == [
        ((), {"x": []}),
        ((), {"x": ["o"]}),
        (("sub",), {"x": ["o"]}),
        (("sub",), {"x": ["o", "i"]}),
        ((), {"x": ["o", "o", "i"]}),
    ]


@pytest.mark.parametrize(("durability", "expected"), [("sync", 4), ("async", 4), ("exit", 1)])
def test_durability_decides_which_steps_are_saved(driver: Any, durability: str, expected: int) -> None:
    graph = (
        StateGraph(S)
        .add_node("a", lambda s: {"x": ["a"]})
        .add_node("b", lambda s: {"x": ["b"]})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": durability}}
    assert driver.invoke(graph, {"x": []}, config, durability=durability) == {"x": ["a", "b"]}
    history = list(graph.get_state_history(config))
    assert len(history) == expected
    assert history[0].values == {"x": ["a", "b"]}
    assert history[0].next == ()
    # the next run continues from what was saved
    assert driver.invoke(graph, {"x": ["again"]}, config, durability=durability)["x"] == [
        "a",
        "b",
        "again",
        "a",
        "b",
    ]


def test_unknown_durability_is_refused() -> None:
    graph = StateGraph(S).add_node("a", lambda s: {"x": ["a"]}).add_edge(START, "a").compile()
    with pytest.raises(ValueError, match="durability must be one of"):
        graph.invoke({"x": []}, durability="sometimes")
