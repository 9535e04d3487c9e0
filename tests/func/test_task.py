"""@task: names, futures, caching, injection, and tasks called from StateGraph nodes."""

from __future__ import annotations

import functools
import pathlib
from typing import Any, TypedDict

import pytest

from plait.cache.memory import InMemoryCache
from plait.cache.sqlite import SqliteCache
from plait.func import entrypoint, task
from plait.graph import START, StateGraph
from plait.types import CachePolicy, StreamWriter


def test_calling_a_task_outside_a_workflow_is_a_clear_error() -> None:
    @task
    def lonely(x: int) -> int:
        return x

    with pytest.raises(RuntimeError, match="outside a running workflow"):
        lonely(1)


def test_task_names() -> None:
    class Greeter:
        def hello(self, who: str) -> str:
            return f"hello {who}"

    def join(sep: str, value: str) -> str:
        return value + sep

    named = task(Greeter().hello, name="greet")
    partial = task(functools.partial(join, "!"))

    @entrypoint()
    def workflow(who: str) -> str:
        return partial(named(who).result()).result()

    assert named.name == "greet"
    assert list(workflow.stream("ada")) == [
        {"greet": "hello ada"},
        {"join": "hello ada!"},
        {"workflow": "hello ada!"},
    ]


def test_explicit_arguments_win_over_injection() -> None:
    @task
    def probe(value: Any, writer: StreamWriter, store: Any) -> Any:
        return (value, writer, store)

    @entrypoint(store="the store")
    def workflow(_: Any) -> list[Any]:
        injected = probe("v").result()
        given = probe("v", writer="w", store="s").result()
        return [injected[2], callable(injected[1]), given]

    assert workflow.invoke(0) == ["the store", True, ("v", "w", "s")]


def test_task_cache_and_clear_cache(driver: Any, tmp_path: pathlib.Path) -> None:
    calls: list[int] = []

    @task(cache_policy=CachePolicy())
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    with SqliteCache(path=str(tmp_path / "cache.db")) as cache:

        @entrypoint(cache=cache)
        def workflow(numbers: list[int]) -> list[int]:
            return [double(n).result() for n in numbers]

        assert driver.invoke(workflow, [1, 2, 1]) == [2, 4, 2]
        assert sorted(calls) == [1, 2]
        assert driver.stream(workflow, [2]) == [
            {"double": 4, "__metadata__": {"cached": True}},
            {"workflow": [4]},
        ]
        assert sorted(calls) == [1, 2]
        double.clear_cache(cache)
        assert driver.invoke(workflow, [2]) == [4]
        assert sorted(calls) == [1, 2, 2]


def test_entrypoint_cache_policy_and_clear_cache() -> None:
    calls: list[int] = []

    @entrypoint(cache=InMemoryCache(), cache_policy=CachePolicy())
    def workflow(x: int) -> int:
        calls.append(x)
        return x + 1

    assert workflow.invoke(1) == 2
    assert workflow.invoke(1) == 2
    assert calls == [1]
    workflow.clear_cache()
    assert workflow.invoke(1) == 2
    assert calls == [1, 1]


class State(TypedDict):
    numbers: list[int]
    total: int


def test_tasks_inside_a_graph_node(driver: Any) -> None:
    @task
    def square(n: int) -> int:
        return n * n

    def node(state: State) -> dict[str, Any]:
        futures = [square(n) for n in state["numbers"]]
        return {"total": sum(f.result() for f in futures)}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    assert driver.invoke(graph, {"numbers": [1, 2, 3], "total": 0}) == {"numbers": [1, 2, 3], "total": 14}
