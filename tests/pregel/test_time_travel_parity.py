"""Time travel across subgraphs, as LangGraph does it: replaying and forking subgraph checkpoints,
stateful subgraphs loading the state they had before the replayed step, and namespaced configs."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.graph import START, StateGraph
from plait.types import Command, interrupt


class State(TypedDict):
    value: Annotated[list[str], operator.add]


class ParentState(TypedDict):
    results: Annotated[list[str], operator.add]


@pytest.fixture
def checkpointer(any_saver: Any) -> Any:
    return any_saver


def _config() -> Any:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}}


def _two_questions(called: list[str], checkpointer: Any) -> Any:
    """Parent: executor (checkpointer=True) -> post. Executor: step_a -> ask_1 -> ask_2."""

    def step_a(state: State) -> State:
        called.append("step_a")
        return {"value": ["a"]}

    def ask_1(state: State) -> State:
        called.append("ask_1")
        return {"value": [f"1:{interrupt('Q1')}"]}

    def ask_2(state: State) -> State:
        called.append("ask_2")
        return {"value": [f"2:{interrupt('Q2')}"]}

    def post(state: State) -> State:
        called.append("post")
        return {"value": ["post"]}

    executor = (
        StateGraph(State)
        .add_node("step_a", step_a)
        .add_node("ask_1", ask_1)
        .add_node("ask_2", ask_2)
        .add_edge(START, "step_a")
        .add_edge("step_a", "ask_1")
        .add_edge("ask_1", "ask_2")
        .compile(checkpointer=True)
    )
    return (
        StateGraph(State)
        .add_node("executor", executor)
        .add_node("post", post)
        .add_edge(START, "executor")
        .add_edge("executor", "post")
        .compile(checkpointer=checkpointer)
    )


def _sub_config(driver: Any, graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    if driver.kind == "sync":
        snap = graph.get_state(config, subgraphs=True)
    else:
        import asyncio

        snap = asyncio.run(graph.aget_state(config, subgraphs=True))
    return snap.tasks[0].state.config


def test_subgraph_snapshot_config_maps_the_checkpoints_around_it(checkpointer: Any, driver: Any) -> None:
    called: list[str] = []
    graph = _two_questions(called, checkpointer)
    config = _config()
    driver.invoke(graph, {"value": []}, config)
    parent = driver.get_state(graph, config)
    sub_config = _sub_config(driver, graph, config)

    conf = sub_config["configurable"]
    assert conf["checkpoint_ns"] == "executor"
    assert conf["checkpoint_map"] == {
        "": parent.config["configurable"]["checkpoint_id"],
        "executor": conf["checkpoint_id"],
    }
    sub = driver.get_state(graph, sub_config)  # read with the subgraph's own graph
    assert sub.next == ("ask_1",)
    assert sub.metadata["parents"] == {"": parent.config["configurable"]["checkpoint_id"]}


def test_replay_from_a_subgraph_checkpoint_continues_there(checkpointer: Any, driver: Any) -> None:
    called: list[str] = []
    graph = _two_questions(called, checkpointer)
    config = _config()
    driver.invoke(graph, {"value": []}, config)
    at_first = _sub_config(driver, graph, config)
    driver.invoke(graph, Command(resume="x1"), config)
    done = driver.invoke(graph, Command(resume="x2"), config)
    assert done["value"] == ["a", "1:x1", "2:x2", "post"]

    called.clear()
    replay = driver.invoke(graph, None, at_first)
    assert [i.value for i in replay["__interrupt__"]] == ["Q1"]
    assert called == ["ask_1"]  # step_a ran before that checkpoint

    called.clear()
    assert driver.invoke(graph, Command(resume="y1"), config)["__interrupt__"][0].value == "Q2"
    final = driver.invoke(graph, Command(resume="y2"), config)
    assert final["value"] == ["a", "1:y1", "2:y2", "post"]
    assert called == ["ask_1", "ask_2", "ask_2", "post"]
    # the replay branched off: the original run's checkpoints are all still there
    sources = [s.metadata["source"] for s in driver.get_state_history(graph, config)]
    assert sources == ["loop", "loop", "fork", "loop", "loop", "loop", "input"]


def test_fork_of_a_subgraph_checkpoint_runs_on_through_the_parent(checkpointer: Any, driver: Any) -> None:
    called: list[str] = []
    graph = _two_questions(called, checkpointer)
    config = _config()
    driver.invoke(graph, {"value": []}, config)
    driver.invoke(graph, Command(resume="x1"), config)
    at_second = _sub_config(driver, graph, config)
    driver.invoke(graph, Command(resume="x2"), config)

    fork = driver.update_state(graph, at_second, {"value": ["forked"]})
    assert fork["configurable"]["checkpoint_ns"] == "executor"
    assert fork["configurable"]["checkpoint_map"]["executor"] == fork["configurable"]["checkpoint_id"]
    called.clear()
    assert driver.invoke(graph, None, fork)["__interrupt__"][0].value == "Q2"
    assert called == ["ask_2"]
    final = driver.invoke(graph, Command(resume="z"), fork)
    assert final["value"] == ["a", "1:x1", "forked", "2:z", "post"]


def test_update_of_a_namespace_no_declared_subgraph_has_raises(checkpointer: Any) -> None:
    graph = _two_questions([], checkpointer)
    config = _config()
    graph.invoke({"value": []}, config)
    elsewhere = {"configurable": {**config["configurable"], "checkpoint_ns": "post:1"}}
    with pytest.raises(ValueError, match="Subgraph post not found"):
        graph.update_state(elsewhere, {"value": ["x"]})


def _parent_node(state: ParentState) -> ParentState:
    return {"results": ["p"]}


def _asks(name: str) -> Any:
    def node(state: State) -> State:
        return {"value": [f"{name}:{interrupt(name)}"]}

    return node


def _stateful(observed: list[list[str]], checkpointer: Any) -> Any:
    def sub_step(state: State) -> State:
        observed.append(list(state["value"]))
        return {"value": ["s"]}

    sub = (
        StateGraph(State)
        .add_node("sub_step", sub_step)
        .add_edge(START, "sub_step")
        .compile(checkpointer=True)
    )
    return (
        StateGraph(ParentState)
        .add_node("parent_node", _parent_node)
        .add_node("sub_node", sub)
        .add_edge(START, "parent_node")
        .add_edge("parent_node", "sub_node")
        .compile(checkpointer=checkpointer)
    )


def test_replay_runs_a_stateful_subgraph_from_its_state_back_then(checkpointer: Any, driver: Any) -> None:
    observed: list[list[str]] = []
    graph = _stateful(observed, checkpointer)
    config = _config()
    driver.invoke(graph, {"results": []}, config)
    driver.invoke(graph, {"results": []}, config)
    assert observed == [[], ["s"]]
    history = driver.get_state_history(graph, config)
    before_second = [s for s in history if s.next == ("parent_node",)][0]
    before_first = [s for s in history if s.next == ("sub_node",)][-1]

    observed.clear()
    driver.invoke(graph, None, before_second.config)
    assert observed == [["s"]]  # not the second run's state
    driver.invoke(graph, {"results": []}, config)
    assert observed == [["s"], ["s", "s"]]  # the replay's state is the newest

    observed.clear()
    fork = driver.update_state(graph, before_first.config, {"results": ["forked"]})
    driver.invoke(graph, None, fork)
    assert observed == [[]]  # no subgraph checkpoint came before the first run


def test_replay_of_a_partly_run_step_asks_every_question_again(checkpointer: Any, driver: Any) -> None:
    graph = (
        StateGraph(State)
        .add_node("a", _asks("a"))
        .add_node("b", _asks("b"))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .compile(checkpointer=checkpointer)
    )
    config = _config()
    asked = driver.invoke(graph, {"value": []}, config)["__interrupt__"]
    question_a = next(i for i in asked if i.value == "a")
    driver.invoke(graph, Command(resume={question_a.id: "yes"}), config)
    head = driver.get_state(graph, config).config

    again = driver.invoke(graph, None, head)
    assert sorted(i.value for i in again["__interrupt__"]) == ["a", "b"]


def test_each_call_of_a_stateful_subgraph_in_a_node_keeps_its_own_state(checkpointer: Any) -> None:
    def echo(label: str) -> Any:
        def node(state: State) -> State:
            return {"value": [label]}

        return StateGraph(State).add_node(label, node).add_edge(START, label).compile(checkpointer=True)

    first, second = echo("first"), echo("second")
    seen: list[tuple[list[str], list[str]]] = []

    def call_both(state: ParentState) -> ParentState:
        seen.append((first.invoke({"value": []})["value"], second.invoke({"value": []})["value"]))
        return {"results": ["done"]}

    graph = (
        StateGraph(ParentState)
        .add_node("call_both", call_both)
        .add_edge(START, "call_both")
        .compile(checkpointer=checkpointer)
    )
    config = _config()
    graph.invoke({"results": []}, config)
    graph.invoke({"results": []}, config)
    assert seen == [(["first"], ["second"]), (["first", "first"], ["second", "second"])]
