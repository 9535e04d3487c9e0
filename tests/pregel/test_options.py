"""Run options: ``version="v2"`` outputs, unknown options, replay forks, resuming several interrupts."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.errors import InvalidUpdateError
from plait.graph import START, StateGraph
from plait.types import Command, GraphOutput, StateUpdate, interrupt


class S(TypedDict):
    x: Annotated[list[str], operator.add]


def _chain(**kwargs: Any) -> Any:
    return (
        StateGraph(S)
        .add_node("a", lambda s: {"x": ["a"]})
        .add_node("b", lambda s: {"x": ["b"]})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(**kwargs)
    )


def test_invoke_v2_returns_a_graph_output(driver: Any) -> None:
    out = driver.invoke(_chain(), {"x": []}, version="v2")
    assert out == GraphOutput(value={"x": ["a", "b"]}, interrupts=())


def test_invoke_v2_separates_interrupts(driver: Any) -> None:
    graph = (
        StateGraph(S)
        .add_node("ask", lambda s: {"x": [interrupt("ok?")]})
        .add_edge(START, "ask")
        .compile(checkpointer=InMemorySaver())
    )
    out = driver.invoke(graph, {"x": []}, {"configurable": {"thread_id": "v2"}}, version="v2")
    assert out.value == {"x": []}
    assert [i.value for i in out.interrupts] == ["ok?"]
    with pytest.warns(DeprecationWarning):
        assert out["__interrupt__"] == out.interrupts


def test_stream_v2_yields_typed_parts(driver: Any) -> None:
    parts = driver.stream(_chain(), {"x": []}, stream_mode=["updates", "values"], version="v2")
    assert parts[:3] == [
        {"type": "values", "ns": (), "data": {"x": []}, "interrupts": ()},
        {"type": "updates", "ns": (), "data": {"a": {"x": ["a"]}}},
        {"type": "values", "ns": (), "data": {"x": ["a"]}, "interrupts": ()},
    ]


def test_unknown_version_and_options_are_refused() -> None:
    with pytest.raises(ValueError, match="version must be"):
        _chain().invoke({"x": []}, version="v3")
    with pytest.raises(TypeError, match="Unexpected run option"):
        _chain().invoke({"x": []}, checkpoint_mode="x")
    with pytest.raises(NotImplementedError, match="output_keys"):
        list(_chain().stream({"x": []}, output_keys=["x"]))


def test_replaying_a_past_checkpoint_writes_a_fork(driver: Any) -> None:
    graph = _chain(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "f"}}
    driver.invoke(graph, {"x": []}, config)
    past = next(h for h in graph.get_state_history(config) if h.next == ("b",))
    assert driver.invoke(graph, None, past.config) == {"x": ["a", "b"]}
    history = [(h.metadata["source"], h.metadata["step"], h.next) for h in graph.get_state_history(config)]
    assert history == [
        ("loop", 3, ()),
        ("fork", 2, ("b",)),
        ("loop", 2, ()),
        ("loop", 1, ("b",)),
        ("loop", 0, ("a",)),
        ("input", -1, ("__start__",)),
    ]
    fork = graph.get_state_history(config)
    newest, forked = next(fork), next(fork)
    assert newest.parent_config == forked.config
    assert (
        forked.parent_config["configurable"]["checkpoint_id"] == past.config["configurable"]["checkpoint_id"]
    )


def test_one_answer_for_several_pending_interrupts_is_refused(driver: Any) -> None:
    graph = (
        StateGraph(S)
        .add_node("p", lambda s: {"x": [f"p:{interrupt('p?')}"]})
        .add_node("q", lambda s: {"x": [f"q:{interrupt('q?')}"]})
        .add_edge(START, "p")
        .add_edge(START, "q")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "m"}}
    driver.invoke(graph, {"x": []}, config)
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        driver.invoke(graph, Command(resume="one"), config)
    answers = {i.id: f"{i.value}!" for i in graph.get_state(config).interrupts}
    assert driver.invoke(graph, Command(resume=answers), config) == {"x": ["p:p?!", "q:q?!"]}


def test_bulk_update_state_writes_one_checkpoint_per_superstep(driver: Any) -> None:
    graph = _chain(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "bulk"}}
    driver.invoke(graph, {"x": []}, config)
    last = graph.bulk_update_state(
        config,
        [[StateUpdate({"x": ["u1"]}, "a"), StateUpdate({"x": ["u2"]}, "b")], [StateUpdate({"x": ["u3"]})]],
    )
    history = list(graph.get_state_history(config))
    assert history[0].config == last
    assert [(h.metadata["source"], h.metadata["step"]) for h in history[:3]] == [
        ("update", 4),
        ("update", 3),
        ("loop", 2),
    ]
    assert history[1].values == {"x": ["a", "b", "u1", "u2"]}
    assert history[1].next == ("b",)  # a's edge
    assert history[0].values == {"x": ["a", "b", "u1", "u2", "u3"]}
    with pytest.raises(ValueError, match="No supersteps"):
        graph.bulk_update_state(config, [])
    with pytest.raises(ValueError, match="No updates"):
        graph.bulk_update_state(config, [[]])


def test_copy_makes_a_sibling_fork_that_runs_again(driver: Any) -> None:
    graph = _chain(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "copy"}}
    driver.invoke(graph, {"x": []}, config)
    past = next(h for h in graph.get_state_history(config) if h.next == ("b",))
    copied = graph.update_state(past.config, None, as_node="__copy__")
    snap = graph.get_state(copied)
    assert (snap.metadata["source"], snap.metadata["step"], snap.next) == ("fork", 2, ("b",))
    assert snap.values == past.values
    assert snap.parent_config == past.parent_config
    assert driver.invoke(graph, None, copied) == {"x": ["a", "b"]}
    with pytest.raises(InvalidUpdateError, match="__copy__"):
        graph.update_state(past.config, {"x": ["no"]}, as_node="__copy__")


def test_a_paused_step_shows_its_finished_writes_without_moving_the_checkpoint(driver: Any) -> None:
    graph = (
        StateGraph(S)
        .add_node("a", lambda s: {"x": [interrupt("q")]})
        .add_node("b", lambda s: {"x": ["b"]})
        .add_edge(START, "a")
        .add_edge(START, "b")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "pv"}}
    out = driver.invoke(graph, {"x": ["in"]}, config)
    assert out["x"] == ["in", "b"]
    assert [i.value for i in out["__interrupt__"]] == ["q"]
    head = graph.get_state(config)
    assert head.values == {"x": ["in", "b"]}  # the thread as it stands: b's pending write shows
    assert graph.get_state(head.config).values == {"x": ["in"]}  # the checkpoint itself did not move
    values = driver.stream(graph, {"x": ["in"]}, {"configurable": {"thread_id": "pv2"}}, stream_mode="values")
    assert values[0] == {"x": ["in"]}
    assert values[1]["x"] == ["in"] and "__interrupt__" in values[1]
    assert values[2] == {"x": ["in", "b"]}
    assert driver.invoke(graph, Command(resume="a"), config) == {"x": ["in", "a", "b"]}


class _Model(BaseModel):
    name: str = "ada"
    n: int = 0


@dataclass
class _Data:
    name: str = "ada"
    n: int = 0


@pytest.mark.parametrize("schema", [_Model, _Data])
def test_v2_outputs_are_the_output_schemas_class(driver: Any, schema: Any) -> None:
    graph = StateGraph(schema).add_node("a", lambda s: {"n": s.n + 1}).add_edge(START, "a").compile()
    out = driver.invoke(graph, {"n": 1}, version="v2")
    assert out.value == schema(n=2) and out.interrupts == ()
    parts = driver.stream(graph, {"n": 1}, stream_mode="values", version="v2")
    assert [p["data"] for p in parts] == [schema(n=1), schema(n=2)]
    assert driver.invoke(graph, {"n": 1}) == {"n": 2}  # version 1: the dict of keys set, as LangGraph's
