"""Subgraphs: interrupts inside them pause the parent; Command.PARENT; private keys stay inside."""

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

    return (StateGraph(Child).add_node("step", step).add_node("ask", ask)
            .add_edge(START, "step").add_edge("step", "ask").add_edge("ask", END).compile())


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemorySaver()
    import sqlite3

    return SqliteSaver(sqlite3.connect(tmp_path / "t.db", check_same_thread=False))


def test_interrupt_inside_a_subgraph_node_pauses_the_parent_and_resumes(saver: Any) -> None:
    builder = StateGraph(Parent).add_node("sub", _child()).add_node("after", lambda s: {"log": ["after"]})
    graph = builder.add_edge(START, "sub").add_edge("sub", "after").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"log": [], "shared": "x"}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["need input"]
    snapshot = graph.get_state(config)
    assert snapshot.next == ("sub",) and snapshot.values == {"log": [], "shared": "x"}
    done = graph.invoke(Command(resume="!"), config)
    assert done == {"log": ["child", "ask", "after"], "shared": "x-child!"}
    assert "inner" not in done, "the subgraph's private key stays in the subgraph"


def test_interrupt_inside_a_subgraph_invoked_from_a_node(saver: Any) -> None:
    child = _child()

    def call(state: Parent) -> dict:
        out = child.invoke({"log": [], "shared": state["shared"]})
        return {"shared": out["shared"], "log": ["called"]}

    graph = StateGraph(Parent).add_node("call", call).add_edge(START, "call").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    assert "__interrupt__" in graph.invoke({"log": [], "shared": "y"}, config)
    assert graph.invoke(Command(resume="?"), config) == {"log": ["called"], "shared": "y-child?"}


def test_command_parent_routes_in_the_parent_graph() -> None:
    def handoff(state: Child) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="after", update={"shared": "from child"})

    child = StateGraph(Child).add_node("handoff", handoff).add_edge(START, "handoff").compile()
    graph = (StateGraph(Parent).add_node("sub", child)
             .add_node("after", lambda s: {"log": [f"after:{s['shared']}"]})
             .add_edge(START, "sub").compile())
    assert graph.invoke({"log": [], "shared": "x"}) == {"log": ["after:from child"], "shared": "from child"}


def test_command_parent_without_a_parent_is_a_clear_error() -> None:
    def handoff(state: Parent) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="x")

    graph = StateGraph(Parent).add_node("handoff", handoff).add_edge(START, "handoff").compile()
    with pytest.raises(ParentCommand, match="Node 'handoff' returned Command"):
        graph.invoke({"log": [], "shared": ""})
