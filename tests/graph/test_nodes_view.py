"""``CompiledStateGraph.nodes``: each node callable on its own, and copied with changes."""

from __future__ import annotations

import pytest
from typing_extensions import TypedDict

from plait.graph import START, StateGraph


class S(TypedDict):
    foo: str


def _graph() -> object:
    return (
        StateGraph(S)
        .add_node("agent", lambda s: {"foo": "agent"}, metadata={"role": "a"})
        .add_edge(START, "agent")
        .compile()
    )


def test_a_node_runs_alone_and_copies_with_changes() -> None:
    nodes = _graph().nodes  # type: ignore[attr-defined]
    agent = nodes["agent"]
    assert agent.invoke({"foo": "in"}) == {"foo": "agent"}
    assert agent.copy({}) == agent and agent.copy() == agent
    renamed = agent.copy({"name": "other", "metadata": {"role": "b"}})
    assert (renamed.name, renamed.metadata, agent.name) == ("other", {"role": "b"}, "agent")
    assert nodes["__start__"].invoke({"foo": "x"}) == {"foo": "x"}


def test_copy_names_an_unknown_field() -> None:
    with pytest.raises(TypeError, match="unknown field.*triggers"):
        _graph().nodes["agent"].copy({"triggers": []})  # type: ignore[attr-defined]
