"""Subgraphs, on both drivers: interrupts inside them pause the parent; Command.PARENT; private keys stay inside."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import ParentCommand
from plait.graph import END, START, StateGraph
from plait.types import Command, interrupt


class Parent(TypedDict):
    log: Annotated[list, operator.add]
    shared: str


class Child(TypedDict):
    log: Annotated[list, operator.add]
    shared: str
    inner: str


def _child() -> Any:
    def step(state: Child) -> dict:
        return {"shared": state["shared"] + "-child", "inner": "private", "log": ["child"]}

    def ask(state: Child) -> dict:
        answer = interrupt("need input")
        return {"shared": state["shared"] + answer, "log": ["ask"]}

    return (
        StateGraph(Child)
        .add_node("step", step)
        .add_node("ask", ask)
        .add_edge(START, "step")
        .add_edge("step", "ask")
        .add_edge("ask", END)
        .compile()
    )


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemorySaver()
    import sqlite3

    return SqliteSaver(sqlite3.connect(tmp_path / "t.db", check_same_thread=False))


def test_interrupt_inside_a_subgraph_node_pauses_the_parent_and_resumes(saver: Any, driver: Any) -> None:
    builder = StateGraph(Parent).add_node("sub", _child()).add_node("after", lambda s: {"log": ["after"]})
    graph = builder.add_edge(START, "sub").add_edge("sub", "after").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    paused = driver.invoke(graph, {"log": [], "shared": "x"}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["need input"]
    snapshot = driver.get_state(graph, config)
    assert snapshot.next == ("sub",) and snapshot.values == {"log": [], "shared": "x"}
    done = driver.invoke(graph, Command(resume="!"), config)
    assert done == {"log": ["child", "ask", "after"], "shared": "x-child!"}
    assert "inner" not in done, "the subgraph's private key stays in the subgraph"


def test_interrupt_inside_a_subgraph_invoked_from_a_node(saver: Any, driver: Any) -> None:
    child = _child()

    def call(state: Parent) -> dict:
        out = child.invoke({"log": [], "shared": state["shared"]})
        return {"shared": out["shared"], "log": ["called"]}

    graph = StateGraph(Parent).add_node("call", call).add_edge(START, "call").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    assert "__interrupt__" in driver.invoke(graph, {"log": [], "shared": "y"}, config)
    assert driver.invoke(graph, Command(resume="?"), config) == {"log": ["called"], "shared": "y-child?"}


def test_command_parent_routes_in_the_parent_graph(driver: Any) -> None:
    def handoff(state: Child) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="after", update={"shared": "from child"})

    child = StateGraph(Child).add_node("handoff", handoff).add_edge(START, "handoff").compile()
    graph = (
        StateGraph(Parent)
        .add_node("sub", child)
        .add_node("after", lambda s: {"log": [f"after:{s['shared']}"]})
        .add_edge(START, "sub")
        .compile()
    )
    assert driver.invoke(graph, {"log": [], "shared": "x"}) == {
        "log": ["after:from child"],
        "shared": "from child",
    }


def test_command_parent_without_a_parent_is_a_clear_error(driver: Any) -> None:
    def handoff(state: Parent) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="x")

    graph = StateGraph(Parent).add_node("handoff", handoff).add_edge(START, "handoff").compile()
    with pytest.raises(ParentCommand, match="Node 'handoff' returned Command"):
        driver.invoke(graph, {"log": [], "shared": ""})


# -- deep nesting ------------------------------------------------------------------------

DEPTH = 150


class Count(TypedDict):
    n: int
    path: Annotated[list, operator.add]


def _leaf(state: Count) -> dict:
    return {"n": state["n"] + 1, "path": ["leaf"]}


def _nested_chain(depth: int, how: str, leaf: Any = _leaf, checkpointer: Any = None) -> Any:
    """``depth`` graphs, each running the previous one: as its node, or invoked inside a node.

    Only the outermost graph gets ``checkpointer``; the others save into its thread.
    """
    graph = StateGraph(Count).add_node("leaf", leaf).add_edge(START, "leaf").compile()
    for level in range(depth):
        if how == "node":
            node: Any = graph
        elif how == "call":

            def node(state: Count, inner: Any = graph, level: int = level) -> dict:
                out = inner.invoke({"n": state["n"], "path": []})
                return {"n": out["n"] + 1, "path": [*out["path"], level]}
        else:  # "acall": an async node awaiting ainvoke

            async def node(state: Count, inner: Any = graph, level: int = level) -> dict:
                out = await inner.ainvoke({"n": state["n"], "path": []})
                return {"n": out["n"] + 1, "path": [*out["path"], level]}

        builder = StateGraph(Count).add_node(f"level{level}", node).add_edge(START, f"level{level}")
        graph = builder.compile(checkpointer=checkpointer if level == depth - 1 else None)
    return graph


def _expected(how: str, depth: int = DEPTH) -> dict:
    if how == "node":
        return {"n": 1, "path": ["leaf"]}
    return {"n": depth + 1, "path": ["leaf", *range(depth)]}


@pytest.mark.parametrize("checkpointer", [False, True], ids=["no-saver", "saver"])
@pytest.mark.parametrize("how", ["node", "call", "acall"])
def test_150_nested_subgraphs(driver: Any, how: str, checkpointer: bool) -> None:
    depth = 2 * DEPTH if how == "acall" else DEPTH  # a level of awaiting async nodes costs fewer frames
    graph = _nested_chain(depth, how, checkpointer=InMemorySaver() if checkpointer else None)
    config = {"configurable": {"thread_id": "deep"}} if checkpointer else None
    assert driver.invoke(graph, {"n": 0, "path": []}, config) == _expected(how, depth)
    if checkpointer:
        assert driver.get_state(graph, config).values == _expected(how, depth)


@pytest.mark.parametrize("how", ["node", "call"])
def test_interrupt_150_subgraphs_deep_pauses_and_resumes(driver: Any, how: str) -> None:
    def ask(state: Count) -> dict:
        return {"n": state["n"] + int(interrupt("how much?")), "path": ["asked"]}

    graph = _nested_chain(DEPTH, how, leaf=ask, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "deep"}}
    paused = driver.invoke(graph, {"n": 0, "path": []}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["how much?"]
    done = driver.invoke(graph, Command(resume="5"), config)
    assert done["n"] == (5 if how == "node" else 5 + DEPTH)
    assert done["path"][0] == "asked"


def test_deep_nesting_leaves_the_recursion_limit_alone(driver: Any) -> None:
    import sys

    limit = sys.getrecursionlimit()
    assert driver.invoke(_nested_chain(DEPTH, "call"), {"n": 0, "path": []}) == _expected("call")
    assert sys.getrecursionlimit() == limit


@pytest.fixture
def every_task_hops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every task on a fresh thread / asyncio task, as deeply nested runs do."""
    from plait.pregel import _arun, _run

    monkeypatch.setattr(_run, "stack_is_deep", lambda: True)
    monkeypatch.setattr(_arun, "stack_is_deep", lambda: True)


@pytest.mark.usefixtures("every_task_hops")
@pytest.mark.parametrize(
    "scenario",
    [
        test_interrupt_inside_a_subgraph_node_pauses_the_parent_and_resumes,
        test_interrupt_inside_a_subgraph_invoked_from_a_node,
    ],
    ids=["node", "call"],
)
def test_subgraph_interrupts_cross_a_thread_hop(saver: Any, driver: Any, scenario: Any) -> None:
    scenario(saver, driver)


@pytest.mark.usefixtures("every_task_hops")
def test_commands_and_errors_cross_a_thread_hop(driver: Any) -> None:
    test_command_parent_routes_in_the_parent_graph(driver)
    test_command_parent_without_a_parent_is_a_clear_error(driver)
    boom = KeyError("boom")

    def fail(state: Parent) -> dict:
        raise boom

    graph = StateGraph(Parent).add_node("fail", fail).add_edge(START, "fail").compile()
    with pytest.raises(KeyError) as info:
        driver.invoke(graph, {"log": [], "shared": ""})
    assert info.value is boom


@pytest.mark.usefixtures("every_task_hops")
def test_async_node_interrupts_and_context_cross_a_hop(saver: Any, driver: Any) -> None:
    from plait.config import get_config

    seen = []

    async def node(state: Parent) -> dict:
        seen.append(get_config()["configurable"]["thread_id"])
        return {"log": [interrupt("why?")]}

    graph = (
        StateGraph(Parent)
        .add_node("sub", _child())
        .add_node("node", node)
        .add_edge(START, "sub")
        .add_edge("sub", "node")
        .compile(checkpointer=saver)
    )
    config = {"configurable": {"thread_id": "t"}}
    assert [i.value for i in driver.invoke(graph, {"log": [], "shared": "x"}, config)["__interrupt__"]] == [
        "need input"
    ]
    assert [i.value for i in driver.invoke(graph, Command(resume="!"), config)["__interrupt__"]] == ["why?"]
    assert driver.invoke(graph, Command(resume="because"), config) == {
        "log": ["child", "ask", "because"],
        "shared": "x-child!",
    }
    assert seen == ["t", "t"]


@pytest.mark.usefixtures("every_task_hops")
def test_parallel_steps_cross_a_hop(driver: Any) -> None:
    graph = (
        StateGraph(Parent)
        .add_node("a", lambda s: {"log": ["a"]})
        .add_node("b", lambda s: {"log": ["b"]})
        .add_node("sub", _child_without_interrupt())
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(START, "sub")
        .compile()
    )
    assert sorted(driver.invoke(graph, {"log": [], "shared": "x"})["log"]) == ["a", "b", "child"]


def _child_without_interrupt() -> Any:
    return (
        StateGraph(Child)
        .add_node("step", lambda s: {"shared": s["shared"] + "-child", "log": ["child"]})
        .add_edge(START, "step")
        .compile()
    )
