"""Sync runs cut short keep what they did: a step longer than ``step_timeout`` raises once it has ended
(threads cannot be stopped) after saving its tasks' writes; a stream the caller closes saves the
checkpoint ``durability="exit"`` held back. Resuming runs nothing again."""

from __future__ import annotations

import operator
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.graph import END, START, StateGraph


class S(TypedDict):
    v: Annotated[list[str], operator.add]


def _graph(calls: list[str], checkpointer: Any = None, slow: float = 0.4) -> Any:
    def slow_node(state: S) -> dict[str, Any]:
        calls.append("slow")
        time.sleep(slow)
        return {"v": ["slow"]}

    def fast(state: S) -> dict[str, Any]:
        calls.append("fast")
        return {"v": ["fast"]}

    def after(state: S) -> dict[str, Any]:
        calls.append("after")
        return {"v": ["after"]}

    builder = StateGraph(S).add_node("slow", slow_node).add_node("fast", fast).add_node("after", after)
    builder.add_edge(START, "slow").add_edge(START, "fast").add_edge(["slow", "fast"], "after")
    graph = builder.add_edge("after", END).compile(checkpointer=checkpointer)
    graph.step_timeout = 0.1
    return graph


def test_a_sync_step_longer_than_step_timeout_raises_after_it_ends() -> None:
    calls: list[str] = []
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="step_timeout"):
        _graph(calls).invoke({"v": []})
    assert time.monotonic() - started >= 0.4  # the slow node's thread ran to its end
    assert sorted(calls) == ["fast", "slow"]  # the next step never started


def test_a_timed_out_step_keeps_its_writes_and_resuming_runs_the_rest(tmp_path: Path) -> None:
    calls: list[str] = []
    with SqliteSaver.from_conn_string(str(tmp_path / "t.db")) as saver:
        graph = _graph(calls, saver)
        config = {"configurable": {"thread_id": "t"}}
        with pytest.raises(TimeoutError):
            graph.invoke({"v": []}, config)
        state = graph.get_state(config)
        assert sorted(state.values["v"]) == ["fast", "slow"]  # finished writes, pending on the head
        graph.step_timeout = None
        assert graph.invoke(None, config)["v"][-1] == "after"
    assert sorted(calls) == ["after", "fast", "slow"]  # neither node of the timed-out step ran again


def test_a_step_within_step_timeout_runs_as_usual() -> None:
    calls: list[str] = []
    graph = _graph(calls, slow=0.0)
    graph.step_timeout = 5
    assert sorted(graph.invoke({"v": []})["v"]) == ["after", "fast", "slow"]


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_closing_a_sync_stream_keeps_the_steps_that_ran(durability: str) -> None:
    calls: list[str] = []

    def step(name: str) -> Any:
        def node(state: S) -> dict[str, Any]:
            calls.append(name)
            return {"v": [name]}

        return node

    builder = StateGraph(S).add_node("a", step("a")).add_node("b", step("b")).add_node("c", step("c"))
    graph = (
        builder.add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .compile(checkpointer=InMemorySaver())
    )
    config = {"configurable": {"thread_id": durability}}
    events = graph.stream({"v": []}, config, stream_mode="updates", durability=durability)
    assert next(events) == {"a": {"v": ["a"]}}
    events.close()
    state = graph.get_state(config)
    assert (state.values, state.next) == ({"v": ["a"]}, ("b",))
    assert graph.invoke(None, config) == {"v": ["a", "b", "c"]} and calls == ["a", "b", "c"]
