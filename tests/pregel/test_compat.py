"""Behaviours compared side by side with LangGraph (each was once different in plait), on both drivers."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from plait.checkpoint.memory import InMemorySaver
from plait.errors import InvalidUpdateError
from plait.graph import END, START, StateGraph
from plait.types import Command, RetryPolicy, Send, default_retry_on


class S(TypedDict):
    log: Annotated[list, operator.add]
    x: int


def _note(name: str) -> Any:
    return lambda s: {"log": [name]}


def test_update_state_on_a_new_thread_then_invoke_none_runs_the_graph(driver: Any) -> None:
    graph = (
        StateGraph(S)
        .add_node("a", lambda s: {"log": ["a"], "x": s["x"] + 1})
        .add_edge(START, "a")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": "new"}}
    driver.update_state(graph, config, {"x": 5, "log": ["seed"]})
    snapshot = driver.get_state(graph, config)
    assert snapshot.next == ("a",) and snapshot.metadata["step"] == 0
    assert driver.invoke(graph, None, config) == {"log": ["seed", "a"], "x": 6}


def test_default_retry_policy_does_not_retry_programming_errors(driver: Any) -> None:
    calls: list[int] = []

    def flaky(state: S) -> dict:
        calls.append(1)
        raise ValueError("boom")

    builder = StateGraph(S).add_node("n", flaky, retry_policy=RetryPolicy(max_attempts=3, initial_interval=0))
    with pytest.raises(ValueError, match="boom"):
        driver.invoke(builder.add_edge(START, "n").compile(), {"log": [], "x": 0})
    assert len(calls) == 1
    assert default_retry_on(ConnectionError()) and not default_retry_on(KeyError("k"))


def test_send_writes_merge_after_the_node_writes_of_the_same_step(driver: Any) -> None:
    builder = StateGraph(S).add_node("fan", lambda s: {}).add_node("x", _note("x"))
    builder.add_node("worker", lambda arg: {"log": [arg]})
    builder.add_edge(START, "fan").add_edge("fan", "x")
    builder.add_conditional_edges("fan", lambda s: [Send("worker", 50)], ["worker"])
    assert driver.invoke(builder.compile(), {"log": [], "x": 0})["log"] == ["x", 50]


def test_command_goto_on_an_existing_thread_runs_only_the_goto(driver: Any) -> None:
    builder = StateGraph(S).add_node("a", _note("a")).add_node("b", _note("b")).add_edge(START, "a")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    driver.invoke(graph, {"log": [], "x": 0}, config)
    assert driver.invoke(graph, Command(goto="b", update={"log": ["u"]}), config)["log"] == ["a", "u", "b"]


def test_interrupt_before_is_reported_in_the_updates_stream(driver: Any) -> None:
    builder = StateGraph(S).add_node("a", _note("a")).add_node("z", _note("z"))
    graph = (
        builder.add_edge(START, "a")
        .add_edge("a", "z")
        .compile(checkpointer=InMemorySaver(), interrupt_before=["z"])
    )
    chunks = driver.stream(graph, {"log": [], "x": 0}, {"configurable": {"thread_id": "q"}})
    assert chunks == [{"a": {"log": ["a"]}}, {"__interrupt__": ()}]


def test_values_stream_shows_the_whole_state_even_with_an_output_schema(driver: Any) -> None:
    class Out(TypedDict):
        x: int

    builder = StateGraph(S, output_schema=Out).add_node("a", lambda s: {"log": ["a"], "x": 1})
    graph = builder.add_edge(START, "a").compile()
    assert driver.stream(graph, {"log": [], "x": 0}, stream_mode="values")[-1] == {"log": ["a"], "x": 1}
    assert driver.invoke(graph, {"log": [], "x": 0}) == {"x": 1}


def test_pydantic_state_object_as_input_brings_its_defaults(driver: Any) -> None:
    class P(BaseModel):
        a: int
        b: list = []

    graph = StateGraph(P).add_node("n", lambda s: {"a": s.a + 1}).add_edge(START, "n").compile()
    assert driver.invoke(graph, P(a=1)) == {"a": 2, "b": []}


def test_non_dict_input_is_an_invalid_update_like_langgraph(driver: Any) -> None:
    graph = StateGraph(S).add_node("n", _note("n")).add_edge(START, "n").add_edge("n", END).compile()
    with pytest.raises(InvalidUpdateError, match="Expected dict, got hello"):
        driver.invoke(graph, "hello")


def test_json_schemas_of_input_and_output() -> None:
    from typing_extensions import TypedDict as TD

    class In(TD):
        question: str

    class Out(TD):
        answer: str

    class All(In, Out):
        pass

    graph = (
        StateGraph(All, input_schema=In, output_schema=Out)
        .add_node("n", lambda s: {"answer": "a"})
        .add_edge(START, "n")
        .compile()
    )
    assert list(graph.get_input_jsonschema()["properties"]) == ["question"]
    assert list(graph.get_output_jsonschema()["properties"]) == ["answer"]


def test_failed_parallel_step_shows_results_and_errors_in_get_state(driver: Any) -> None:
    fail = [True]

    def bad(state: S) -> dict:
        if fail[0]:
            raise RuntimeError("boom")
        return {"log": ["b"]}

    builder = (
        StateGraph(S).add_node("a", _note("a")).add_node("b", bad).add_edge(START, "a").add_edge(START, "b")
    )
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError):
        driver.invoke(graph, {"log": [], "x": 0}, config)
    assert [(t.name, t.error, t.result) for t in driver.get_state(graph, config).tasks] == [
        ("a", None, {"log": ["a"]}),
        ("b", "RuntimeError('boom')", None),
    ]
    fail[0] = False
    assert driver.invoke(graph, None, config)["log"] == ["a", "b"]


def test_a_missing_checkpoint_id_is_a_clear_error(driver: Any) -> None:
    from plait.errors import CheckpointNotFoundError

    graph = StateGraph(S).add_node("a", _note("a")).add_edge(START, "a").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t", "checkpoint_id": "nope"}}
    with pytest.raises(CheckpointNotFoundError, match="has no checkpoint 'nope'"):
        driver.invoke(graph, {"log": [], "x": 0}, config)
    with pytest.raises(CheckpointNotFoundError):
        driver.update_state(graph, config, {"x": 1})
