"""An error from a node or its routers names the task it came from (a note under its traceback), and
a router that takes a config gets its task's, as in LangGraph."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from typing_extensions import TypedDict

from plait._context import TASK_CONTEXT
from plait.checkpoint.memory import InMemorySaver
from plait.config import get_config
from plait.graph import END, START, StateGraph
from plait.types import RetryPolicy

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes: Python 3.11+")


class S(TypedDict):
    x: int


def _refuse(old: int, new: int) -> int:
    raise ValueError("the reducer refuses")


class R(TypedDict):
    x: Annotated[int, _refuse]


def _boom(state: S) -> dict[str, Any]:
    raise ValueError("boom")


def _one(state: S) -> dict[str, Any]:
    return {"x": 1}


def _notes(exc: BaseException) -> list[str]:
    return list(getattr(exc, "__notes__", []))


def _streamed(graph: Any, config: RunnableConfig | None = None) -> tuple[dict[str, str], BaseException]:
    """The ids the ``tasks`` stream gives each node's task, by name, and the error the run ends with."""
    ids: dict[str, str] = {}
    with pytest.raises(Exception) as caught:  # noqa: PT011 - whatever the run fails with
        for event in graph.stream({"x": 0}, config, stream_mode="tasks"):
            if "input" in event:
                ids[event["name"]] = event["id"]
    return ids, caught.value


def test_a_failing_node_is_named_with_its_task_id() -> None:
    """The id is the one the run's ``tasks`` stream gives the task."""
    saved = (
        StateGraph(S).add_node("boom", _boom).add_edge(START, "boom").compile(checkpointer=InMemorySaver())
    )
    ids, error = _streamed(saved, {"configurable": {"thread_id": "t"}})
    assert _notes(error) == [f"During task with name 'boom' and id '{ids['boom']}'"]


def test_the_fast_path_names_the_task_as_the_loop_does() -> None:
    """Without a saver a task's id is the same in every run: ``invoke`` (the fast path) and a stream
    (the loop) name the same one."""
    graph = StateGraph(S).add_node("boom", _boom).add_edge(START, "boom").compile()
    with pytest.raises(ValueError, match="boom") as caught:
        graph.invoke({"x": 0})
    ids, error = _streamed(graph)
    assert _notes(caught.value) == _notes(error) == [f"During task with name 'boom' and id '{ids['boom']}'"]


def test_an_async_node_and_a_retried_one_get_one_note() -> None:
    calls: list[int] = []

    async def boom(state: S) -> dict[str, Any]:
        calls.append(1)
        raise ValueError("boom")

    retry = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=ValueError)
    graph = StateGraph(S).add_node("boom", boom, retry_policy=retry).add_edge(START, "boom").compile()
    with pytest.raises(ValueError, match="boom") as caught:
        asyncio.run(graph.ainvoke({"x": 0}))
    assert len(calls) == 3
    (note,) = _notes(caught.value)
    assert note.startswith("During task with name 'boom' and id '")


@pytest.mark.parametrize("saver", [False, True], ids=["fast-path", "loop"])
def test_a_failing_router_is_named_by_the_task_it_routes_from(saver: bool) -> None:
    def route(state: S) -> str:
        raise KeyError("no route")

    builder = StateGraph(S).add_node("a", _one).add_edge(START, "a")
    graph = builder.add_conditional_edges("a", route, [END]).compile(
        checkpointer=InMemorySaver() if saver else None
    )
    config: RunnableConfig | None = {"configurable": {"thread_id": "t"}} if saver else None
    with pytest.raises(KeyError) as caught:
        graph.invoke({"x": 0}, config)
    (note,) = _notes(caught.value)
    assert note.startswith("During task with name 'a' and id '")


def test_an_error_from_a_subgraph_names_both_tasks() -> None:
    inner = StateGraph(S).add_node("deep", _boom).add_edge(START, "deep").compile()
    outer = StateGraph(S).add_node("sub", inner).add_edge(START, "sub").compile()
    with pytest.raises(ValueError, match="boom") as caught:
        outer.invoke({"x": 0})
    names = [note.split("'")[1] for note in _notes(caught.value)]
    assert names == ["deep", "sub"]


def test_a_router_taking_a_config_gets_its_tasks_metadata() -> None:
    seen: list[dict[str, Any]] = []

    def route(state: S, config: RunnableConfig) -> str:
        seen.append(dict(config.get("metadata") or {}))
        return END

    builder = StateGraph(S).add_node("a", _one).add_edge(START, "a")
    graph = builder.add_conditional_edges("a", route, [END]).compile()
    assert graph.invoke({"x": 0}, {"metadata": {"user": "ada"}}) == {"x": 1}
    (metadata,) = seen
    assert metadata["user"] == "ada"
    assert (metadata["langgraph_node"], metadata["langgraph_step"]) == ("a", 1)


@pytest.mark.parametrize("saver", [False, True], ids=["fast-path", "loop"])
def test_a_router_reads_its_tasks_config_with_get_config(saver: bool) -> None:
    seen: list[object] = []

    def route(state: S) -> str:
        seen.append(get_config().get("metadata", {}).get("langgraph_node"))
        return END

    async def aroute(state: S) -> str:
        seen.append(get_config().get("metadata", {}).get("langgraph_node"))
        return END

    for router in (route, aroute):
        builder = StateGraph(S).add_node("a", _one).add_edge(START, "a")
        graph = builder.add_conditional_edges("a", router, [END]).compile(
            checkpointer=InMemorySaver() if saver else None
        )
        config: RunnableConfig | None = {"configurable": {"thread_id": "t"}} if saver else None
        assert graph.invoke({"x": 0}, config) == {"x": 1}
        assert asyncio.run(graph.ainvoke({"x": 0}, config)) == {"x": 1}
    assert seen == ["a"] * 4


def test_no_task_context_is_left_after_a_node_a_merge_or_a_router_fails() -> None:
    def bad_update(state: R) -> dict[str, Any]:
        return {"x": 1}

    def stop(state: S) -> dict[str, Any]:
        raise KeyboardInterrupt

    def route(state: S) -> str:
        raise KeyError("no route")

    graphs = [
        StateGraph(S).add_node("n", _boom).add_edge(START, "n").compile(),
        StateGraph(R).add_node("n", bad_update).add_edge(START, "n").compile(),
        StateGraph(S).add_node("n", stop).add_edge(START, "n").compile(),
        StateGraph(S)
        .add_node("n", _one)
        .add_edge(START, "n")
        .add_conditional_edges("n", route, [END])
        .compile(),
    ]
    for graph in graphs:
        with pytest.raises((Exception, KeyboardInterrupt)):  # noqa: PT011 - each fails its own way
            graph.invoke({"x": 0})
        assert TASK_CONTEXT.get() is None
