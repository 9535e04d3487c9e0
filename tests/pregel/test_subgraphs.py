"""Subgraphs seen from the parent: their state in ``get_state``, and ``get_subgraphs``."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import START, StateGraph
from plait.types import Command, interrupt


class S(TypedDict):
    data: str


def _paused(sub_checkpointer: Any = None) -> tuple[Any, dict[str, Any]]:
    def process(state: S) -> dict[str, Any]:
        return {"data": f"{state['data']}+{interrupt('continue?')}"}

    sub = (
        StateGraph(S)
        .add_node("process", process)
        .add_edge(START, "process")
        .compile(checkpointer=sub_checkpointer)
    )
    graph = StateGraph(S).add_node("sub", sub).add_edge(START, "sub").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"data": "in"}, config)
    return graph, config


def test_a_paused_subgraph_task_points_at_its_namespace() -> None:
    graph, config = _paused()
    (task,) = graph.get_state(config).tasks
    assert task.name == "sub"
    assert task.state["configurable"]["thread_id"] == "t"
    assert task.state["configurable"]["checkpoint_ns"].startswith("sub:")


def test_get_state_with_subgraphs_nests_the_subgraph_snapshot() -> None:
    graph, config = _paused()
    (task,) = graph.get_state(config, subgraphs=True).tasks
    inner = task.state
    assert inner.values == {"data": "in"}
    assert inner.next == ("process",)
    assert [i.value for i in inner.interrupts] == ["continue?"]
    assert inner.config["configurable"]["checkpoint_ns"] == task.state.config["configurable"]["checkpoint_ns"]
    # the same through the async API
    (atask,) = asyncio.run(graph.aget_state(config, subgraphs=True)).tasks
    assert atask.state.values == inner.values
    # and it resumes as before
    assert graph.invoke(Command(resume="yes"), config) == {"data": "in+yes"}
    assert graph.get_state(config, subgraphs=True).tasks == ()


def test_a_persistent_subgraph_keeps_the_node_name_as_namespace() -> None:
    graph, config = _paused(sub_checkpointer=True)
    (task,) = graph.get_state(config, subgraphs=True).tasks
    assert task.state.config["configurable"]["checkpoint_ns"] == "sub"


def test_get_subgraphs_lists_subgraph_nodes() -> None:
    graph, _ = _paused()
    names = [name for name, _ in graph.get_subgraphs()]
    assert names == ["sub"]
    assert [n for n, _ in graph.get_subgraphs(namespace="sub:abc")] == ["sub"]
    assert list(graph.get_subgraphs(namespace="other")) == []

    async def collect() -> list[str]:
        return [name async for name, _ in graph.aget_subgraphs()]

    assert asyncio.run(collect()) == ["sub"]


def test_a_subgraph_breakpoint_pauses_the_parent_and_resumes_where_it_stopped(driver: Any) -> None:
    class L(TypedDict):
        log: Annotated[list[str], operator.add]

    calls: list[str] = []

    def step(name: str) -> Any:
        def run(state: L) -> dict[str, Any]:
            calls.append(name)
            return {"log": [name]}

        return run

    inner = (
        StateGraph(L)
        .add_node("i1", step("i1"))
        .add_node("i2", step("i2"))
        .add_edge(START, "i1")
        .add_edge("i1", "i2")
        .compile(interrupt_before=["i2"])
    )
    graph = (
        StateGraph(L)
        .add_node("inner", inner)
        .add_node("after", step("after"))
        .add_edge(START, "inner")
        .add_edge("inner", "after")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "bp"}}
    first = driver.invoke(graph, {"log": []}, config)
    assert "__interrupt__" not in first  # a static breakpoint carries no interrupt value
    assert graph.get_state(config).next == ("inner",)
    assert calls == ["i1"]
    assert driver.invoke(graph, None, config) == {"log": ["i1", "i2", "after"]}
    assert calls == ["i1", "i2", "after"]  # i1 did not run again
