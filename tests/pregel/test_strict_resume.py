"""Strict resume checks, ``interrupt(response_schema=)``, and what a resume writes."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.errors import UnknownInterruptError, is_invalid_resume
from plait.graph import START, StateGraph
from plait.types import Command, RetryPolicy, interrupt

STRICT = "__pregel_strict_resume"
UNKNOWN = "0" * 32


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    answer: Any


@pytest.fixture
def saver(any_saver: Any) -> Any:
    return any_saver


def _config(strict: bool = True) -> dict[str, Any]:
    return {"configurable": {"thread_id": "t", STRICT: strict}}


def _parallel(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"log": [f"a:{interrupt('a?')}"]})
    builder.add_node("b", lambda s: {"log": [f"b:{interrupt('b?')}"]})
    return builder.add_edge(START, "a").add_edge(START, "b").compile(checkpointer=saver)


def _ids(graph: Any, config: dict[str, Any]) -> dict[str, str]:
    return {i.value: i.id for i in graph.get_state(config).interrupts}


def test_strict_refuses_unknown_answered_empty_and_ambiguous(saver: Any) -> None:
    graph, config = _parallel(saver), _config()
    graph.invoke({"log": []}, config)
    ids = _ids(graph, config)
    pending = tuple(sorted(ids.values()))
    checkpoints = len(list(saver.list(config)))
    with pytest.raises(UnknownInterruptError, match=UNKNOWN) as err:
        graph.invoke(Command(resume={UNKNOWN: "x"}), config)
    assert (err.value.reason, err.value.interrupt_ids, err.value.pending_ids) == (
        "not_pending",
        (UNKNOWN,),
        pending,
    )
    with pytest.raises(UnknownInterruptError, match="names no interrupt") as err:
        graph.invoke(Command(resume={}), config)
    assert err.value.reason == "empty_map"
    with pytest.raises(UnknownInterruptError, match="multiple pending interrupts") as err:
        graph.invoke(Command(resume="yes"), config)
    assert (err.value.reason, err.value.pending_ids) == ("ambiguous", pending)
    assert len(list(saver.list(config))) == checkpoints  # nothing was written

    graph.invoke(Command(resume={ids["a?"]: "yes"}), config)
    with pytest.raises(UnknownInterruptError) as err:
        graph.invoke(Command(resume={ids["a?"]: "again"}), config)
    assert (err.value.interrupt_ids, err.value.pending_ids) == ((ids["a?"],), (ids["b?"],))
    assert sorted(graph.invoke(Command(resume="no"), config)["log"]) == ["a:yes", "b:no"]


def test_without_strict_an_unknown_id_answers_nothing(saver: Any) -> None:
    graph, config = _parallel(saver), _config(strict=False)
    graph.invoke({"log": []}, config)
    graph.invoke(Command(resume={UNKNOWN: "x"}), config)
    assert set(_ids(graph, config)) == {"a?", "b?"}
    with pytest.raises(RuntimeError, match="multiple pending interrupts"):
        graph.invoke(Command(resume="yes"), config)


def test_a_retried_node_gets_its_answer_again(saver: Any) -> None:
    failures = [ConnectionError("flaky")]

    def ask(state: State) -> State:
        answer = interrupt("ok?")
        if failures:
            raise failures.pop()
        return {"log": [answer]}

    policy = RetryPolicy(initial_interval=0, jitter=False)
    graph = StateGraph(State).add_node("ask", ask, retry_policy=policy).add_edge(START, "ask")
    compiled, config = graph.compile(checkpointer=saver), _config()
    compiled.invoke({"log": []}, config)
    (card,) = compiled.get_state(config).interrupts
    assert compiled.invoke(Command(resume={card.id: "yes"}), config)["log"] == ["yes"]


class Decision(BaseModel):
    approved: bool


def test_response_schema_is_shown_and_checks_the_answer(saver: Any) -> None:
    graph = (
        StateGraph(State)
        .add_node("ask", lambda s: {"answer": interrupt("approve?", response_schema=Decision)})
        .add_edge(START, "ask")
        .compile(checkpointer=saver)
    )
    config = _config(strict=False)
    (card,) = graph.invoke({"answer": None}, config)["__interrupt__"]
    assert card.response_schema == Decision.model_json_schema()
    with pytest.raises(ValidationError) as err:
        graph.invoke(Command(resume={"approved": "nope"}), config)
    assert is_invalid_resume(err.value)
    assert not is_invalid_resume(ValueError("x"))
    assert graph.invoke(Command(resume={"approved": True}), config)["answer"] == Decision(approved=True)


def test_a_raw_json_schema_is_shown_and_not_checked() -> None:
    schema = {"type": "object"}
    graph = (
        StateGraph(State)
        .add_node("ask", lambda s: {"answer": interrupt("q", response_schema=schema)})
        .add_edge(START, "ask")
        .compile(checkpointer=InMemorySaver())
    )
    config = _config(strict=False)
    (card,) = graph.invoke({"answer": None}, config)["__interrupt__"]
    assert card.response_schema == schema
    assert graph.invoke(Command(resume=5), config)["answer"] == 5


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_each_resume_update_applies_once(saver: Any, durability: str) -> None:
    def ask_three(state: State) -> State:
        return {"log": ["a:" + "".join(interrupt(str(n)) for n in range(1, 4))]}

    graph = StateGraph(State).add_node("a", ask_three).add_edge(START, "a").compile(checkpointer=saver)
    config = _config(strict=False)
    graph.invoke({"log": []}, config, durability=durability)
    for n in range(1, 4):
        result = graph.invoke(
            Command(resume=str(n), update={"log": [f"u{n}"]}), config, durability=durability
        )
    assert sorted(result["log"]) == ["a:123", "u1", "u2", "u3"]


def test_a_task_that_finished_without_writes_is_not_run_again(saver: Any) -> None:
    calls: list[str] = []

    def a(state: State) -> None:
        calls.append("a")
        interrupt("A")

    def b(state: State) -> State:
        calls.append("b")
        return {"log": [interrupt("B")]}

    graph = StateGraph(State).add_node("a", a).add_node("b", b)
    compiled = graph.add_edge(START, "a").add_edge(START, "b").compile(checkpointer=saver)
    config = _config(strict=False)
    compiled.invoke({"log": []}, config)
    ids = _ids(compiled, config)
    compiled.invoke(Command(resume={ids["A"]: "yes"}), config)
    assert [i.value for i in compiled.get_state(config).interrupts] == ["B"]
    compiled.invoke(Command(resume={ids["B"]: "ok"}), config)
    assert sorted(calls) == ["a", "a", "b", "b", "b"]


def test_the_head_shows_a_resume_update_while_the_node_still_waits() -> None:
    class XY(TypedDict, total=False):
        x: int
        y: int

    def ask_twice(state: XY) -> dict[str, Any]:
        return {"x": interrupt("q1") + interrupt("q2")}

    graph = StateGraph(XY).add_node("a", ask_twice).add_edge(START, "a").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    graph.invoke({"x": 0}, config)
    graph.invoke(Command(resume=1, update={"y": 9}), config)  # answers q1; the node asks q2
    state = graph.get_state(config)
    assert (state.values, state.next) == ({"x": 0, "y": 9}, ("a",))
    assert graph.invoke(Command(resume=2), config) == {"x": 3, "y": 9}
