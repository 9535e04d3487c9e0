"""Durability modes seen from the saver and the stream: what subgraphs store, and what the
debug/checkpoints stream says about a checkpoint's parent."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.graph import START, StateGraph
from plait.types import Command, interrupt


class S(TypedDict):
    log: Annotated[list[str], operator.add]


@pytest.fixture
def saver(any_saver: Any) -> Any:
    return any_saver


def _add(name: str) -> Any:
    return lambda state: {"log": [name]}


def _parent(saver: Any) -> Any:
    child = (
        StateGraph(S)
        .add_node("c_one", _add("c_one"))
        .add_node("c_two", _add("c_two"))
        .add_edge(START, "c_one")
        .add_edge("c_one", "c_two")
        .compile()
    )
    return (
        StateGraph(S)
        .add_node("p_one", _add("p_one"))
        .add_node("p_two", child)
        .add_edge(START, "p_one")
        .add_edge("p_one", "p_two")
        .compile(checkpointer=saver)
    )


def _namespaces(saver: Any, thread: str) -> list[str]:
    listed = saver.list({"configurable": {"thread_id": thread}})  # no checkpoint_ns: every namespace
    return sorted(t.config["configurable"]["checkpoint_ns"].split(":")[0] for t in listed)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_subgraph_stores_its_steps_with_the_parents_durability(saver: Any, durability: str) -> None:
    graph = _parent(saver)
    graph.invoke({"log": []}, {"configurable": {"thread_id": "1"}}, durability=durability)
    assert _namespaces(saver, "1") == [""] * 4 + ["p_two"] * 4


def test_with_exit_durability_a_finished_subgraph_stores_nothing(saver: Any) -> None:
    graph = _parent(saver)
    out = graph.invoke({"log": []}, {"configurable": {"thread_id": "1"}}, durability="exit")
    assert out["log"][-2:] == ["c_one", "c_two"]
    assert _namespaces(saver, "1") == [""]


def test_with_exit_durability_an_interrupted_subgraph_is_stored_and_resumes(saver: Any) -> None:
    def ask(state: S) -> dict[str, Any]:
        return {"log": [interrupt("q")]}

    sub = StateGraph(S).add_node("ask", ask).add_node("after", _add("after"))
    sub = sub.add_edge(START, "ask").add_edge("ask", "after").compile()
    graph = StateGraph(S).add_node("sub", sub).add_edge(START, "sub").compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "1"}}
    out = graph.invoke({"log": ["in"]}, config, durability="exit")
    assert [i.value for i in out["__interrupt__"]] == ["q"]
    assert sorted(set(_namespaces(saver, "1"))) == ["", "sub"]
    assert graph.invoke(Command(resume="a"), config, durability="exit") == {"log": ["in", "in", "a", "after"]}


def _checkpoint_events(graph: Any, config: Any, durability: str, mode: str) -> list[dict[str, Any]]:
    events = graph.stream({"log": []}, config, stream_mode=mode, durability=durability)
    if mode == "debug":
        return [e["payload"] for e in events if e["type"] == "checkpoint"]
    return list(events)


@pytest.mark.parametrize("mode", ["debug", "checkpoints"])
def test_with_exit_durability_checkpoint_events_name_no_parent(saver: Any, mode: str) -> None:
    graph = _parent(saver)
    config = {"configurable": {"thread_id": "1"}}
    for _ in range(2):  # the second run starts from a stored checkpoint: its events name none either
        events = _checkpoint_events(graph, config, "exit", mode)
        assert len(events) == 4 and all(e["parent_config"] is None for e in events)
    history = list(graph.get_state_history(config))
    assert len(history) == 2  # one checkpoint per run, the first one the second's parent
    assert history[0].parent_config == history[1].config and history[1].parent_config is None
    assert history[0].config["configurable"] == events[-1]["config"]["configurable"]


def test_with_sync_durability_checkpoint_events_match_the_history(saver: Any) -> None:
    graph = _parent(saver)
    config = {"configurable": {"thread_id": "1"}}
    events = _checkpoint_events(graph, config, "sync", "debug")
    history = list(reversed(list(graph.get_state_history(config))))
    assert [e["config"]["configurable"] for e in events] == [h.config["configurable"] for h in history]
    parents = [None if e["parent_config"] is None else e["parent_config"]["configurable"] for e in events]
    assert parents == [None if h.parent_config is None else h.parent_config["configurable"] for h in history]
