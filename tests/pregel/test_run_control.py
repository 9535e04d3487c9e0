"""RunControl (cooperative drain), the runtime's execution/server info and context coercion."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.errors import GraphDrained
from plait.graph import START, StateGraph
from plait.runtime import ExecutionInfo, RunControl, Runtime, ServerInfo


class State(TypedDict, total=False):
    first: str
    second: str


@pytest.fixture
def saver(any_saver: Any) -> Any:
    return any_saver


def _two_steps(ran: list[str], drain_in_first: bool = True) -> StateGraph[State]:
    def first(state: State, runtime: Runtime) -> State:
        ran.append("first")
        if drain_in_first:
            assert runtime.control is not None
            runtime.control.request_drain("sigterm")
        return {"first": "done"}

    def second(state: State) -> State:
        ran.append("second")
        return {"second": "done"}

    builder = StateGraph(State)
    builder.add_node("first", first).add_node("second", second)
    builder.add_edge(START, "first").add_edge("first", "second")
    return builder


def test_run_control_keeps_the_first_reason() -> None:
    control = RunControl()
    assert (control.drain_requested, control.drain_reason) == (False, None)
    control.request_drain("rollout")
    control.request_drain("later")
    assert (control.drain_requested, control.drain_reason) == (True, "rollout")


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_drain_stops_at_the_step_boundary_and_resumes(saver: Any, durability: str) -> None:
    ran: list[str] = []
    graph = _two_steps(ran).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(GraphDrained, match="sigterm") as drained:
        graph.invoke({}, config, durability=durability, control=RunControl())
    assert drained.value.reason == "sigterm"
    assert ran == ["first"]
    assert graph.get_state(config).next == ("second",)
    assert graph.invoke(None, config, durability=durability) == {"first": "done", "second": "done"}
    assert ran == ["first", "second"]


def test_a_drain_in_the_last_step_finishes_normally() -> None:
    control = RunControl()

    def only(state: State) -> State:
        control.request_drain()
        return {"first": "done"}

    graph = StateGraph(State).add_node("only", only).add_edge(START, "only").compile()
    assert graph.invoke({}, control=control) == {"first": "done"}


def test_a_drained_subgraph_drains_its_parent_and_resumes(saver: Any) -> None:
    ran: list[str] = []
    child = _two_steps(ran).compile(checkpointer=True)
    parent = StateGraph(State).add_node("child", child).add_edge(START, "child").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(GraphDrained, match="sigterm"):
        parent.invoke({}, config)
    assert parent.invoke(None, config) == {"first": "done", "second": "done"}
    assert ran == ["first", "second"]


def test_a_predrained_control_runs_nothing_async() -> None:
    ran: list[str] = []
    control = RunControl()
    control.request_drain("stop")
    graph = _two_steps(ran, drain_in_first=False).compile()
    with pytest.raises(GraphDrained, match="stop"):
        asyncio.run(graph.ainvoke({}, control=control))
    assert ran == []


def test_control_must_be_a_run_control() -> None:
    graph = _two_steps([], drain_in_first=False).compile()
    with pytest.raises(TypeError, match="RunControl"):
        graph.invoke({}, control="stop")


def test_runtime_merge_override_and_patch() -> None:
    control, info = RunControl(), ExecutionInfo(checkpoint_id="c", checkpoint_ns="n", task_id="t")
    merged = Runtime(context="a", control=control).merge(Runtime(context=None, execution_info=info))
    assert (merged.context, merged.control, merged.execution_info) == ("a", control, info)
    assert merged.override(context="b").context == "b"
    assert merged.patch_execution_info(node_attempt=2).execution_info == info.patch(node_attempt=2)
    with pytest.raises(RuntimeError):
        Runtime().patch_execution_info(node_attempt=2)
    with pytest.raises(TypeError):
        Runtime().override(nope=1)


def test_nodes_see_execution_and_server_info() -> None:
    seen: dict[str, Any] = {}

    def node(state: State, runtime: Runtime) -> State:
        seen["info"], seen["server"] = runtime.execution_info, runtime.server_info
        return {"first": "done"}

    graph = (
        StateGraph(State).add_node("node", node).add_edge(START, "node").compile(checkpointer=InMemorySaver())
    )
    graph.invoke({}, {"configurable": {"thread_id": "t", "assistant_id": "a", "graph_id": "g"}})
    info: ExecutionInfo = seen["info"]
    assert (info.thread_id, info.node_attempt) == ("t", 1)
    assert info.checkpoint_ns == f"node:{info.task_id}"
    assert isinstance(info.node_first_attempt_time, float)
    assert seen["server"] == ServerInfo(assistant_id="a", graph_id="g")


def test_a_dict_context_becomes_the_context_schema() -> None:
    @dataclass
    class Context:
        key: str
        timeout: int = 30

    def node(state: State, runtime: Runtime[Context]) -> State:
        assert runtime.context is not None
        return {"first": f"{runtime.context.key}:{runtime.context.timeout}"}

    builder = StateGraph(State, context_schema=Context)
    graph = builder.add_node("node", node).add_edge(START, "node").compile()
    assert graph.invoke({}, context={"key": "k"}) == {"first": "k:30"}
    with pytest.raises(TypeError):
        graph.invoke({}, context={"nope": 1})
