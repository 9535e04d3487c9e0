"""Node caching in a StateGraph: cache_policy + compile(cache=), replayed writes, clear_cache."""

from __future__ import annotations

import operator
import pathlib
from typing import Annotated, Any, TypedDict

import pytest

from plait.cache.memory import InMemoryCache
from plait.cache.sqlite import SqliteCache
from plait.checkpoint.memory import InMemorySaver
from plait.graph import START, StateGraph
from plait.types import CachePolicy, Command, Send


class State(TypedDict):
    x: int
    log: Annotated[list[str], operator.add]


def _graph(calls: list[int], policy: CachePolicy[Any] | None = None) -> StateGraph[Any, Any, Any, Any]:
    def a(state: State) -> dict[str, Any]:
        calls.append(state["x"])
        return {"log": [f"a{state['x']}"]}

    def b(state: State) -> dict[str, Any]:
        return {"log": ["b"]}

    builder = StateGraph(State)
    builder.add_node("a", a, cache_policy=policy or CachePolicy())
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    return builder


def test_a_cached_node_is_not_called_again(driver: Any) -> None:
    calls: list[int] = []
    graph = _graph(calls).compile(cache=InMemoryCache())
    first = driver.stream(graph, {"x": 1, "log": []}, stream_mode="updates")
    second = driver.stream(graph, {"x": 1, "log": []}, stream_mode="updates")
    assert first == [{"a": {"log": ["a1"]}}, {"b": {"log": ["b"]}}]
    assert second == [{"a": {"log": ["a1"]}, "__metadata__": {"cached": True}}, {"b": {"log": ["b"]}}]
    assert calls == [1]
    assert driver.invoke(graph, {"x": 2, "log": []}) == {"x": 2, "log": ["a2", "b"]}
    assert calls == [1, 2]


def test_without_a_cache_the_policy_has_no_effect(driver: Any) -> None:
    calls: list[int] = []
    graph = _graph(calls).compile()
    driver.invoke(graph, {"x": 1, "log": []})
    driver.invoke(graph, {"x": 1, "log": []})
    assert calls == [1, 1]
    with pytest.raises(ValueError, match="No cache is set"):
        graph.clear_cache()


def test_key_func_and_clear_cache() -> None:
    calls: list[int] = []
    graph = _graph(calls, CachePolicy(key_func=lambda state: str(state["x"] % 2))).compile(
        cache=InMemoryCache()
    )
    graph.invoke({"x": 1, "log": []})
    assert graph.invoke({"x": 3, "log": []}) == {"x": 3, "log": ["a1", "b"]}  # same key: replayed
    assert calls == [1]
    graph.clear_cache(["b"])  # another node's entries
    graph.invoke({"x": 3, "log": []})
    assert calls == [1]
    graph.clear_cache()
    graph.invoke({"x": 3, "log": []})
    assert calls == [1, 3]


def test_bad_key_func_result_is_a_clear_error() -> None:
    graph = _graph([], CachePolicy(key_func=lambda state: state["x"])).compile(cache=InMemoryCache())
    with pytest.raises(TypeError, match="key_func must return str or bytes"):
        graph.invoke({"x": 1, "log": []})


def test_ttl_expiry(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    clock = [1000.0]
    monkeypatch.setattr("plait.cache.memory.time.time", lambda: clock[0])
    graph = _graph(calls, CachePolicy(ttl=10)).compile(cache=InMemoryCache())
    graph.invoke({"x": 1, "log": []})
    clock[0] += 5
    graph.invoke({"x": 1, "log": []})
    assert calls == [1]
    clock[0] += 6
    graph.invoke({"x": 1, "log": []})
    assert calls == [1, 1]


def test_errors_and_interrupts_are_not_cached(driver: Any) -> None:
    calls: list[str] = []

    def flaky(state: State) -> dict[str, Any]:
        calls.append("try")
        if len(calls) == 1:
            raise RuntimeError("first call fails")
        return {"log": ["ok"]}

    graph = (
        StateGraph(State)
        .add_node("flaky", flaky, cache_policy=CachePolicy())
        .add_edge(START, "flaky")
        .compile(cache=InMemoryCache())
    )
    with pytest.raises(RuntimeError):
        driver.invoke(graph, {"x": 1, "log": []})
    assert driver.invoke(graph, {"x": 1, "log": []})["log"] == ["ok"]
    assert driver.invoke(graph, {"x": 1, "log": []})["log"] == ["ok"]
    assert calls == ["try", "try"]


def test_routing_is_replayed_too(tmp_path: pathlib.Path) -> None:
    calls: list[str] = []

    def fan(state: State) -> Command[Any]:
        calls.append("fan")
        return Command(update={"log": ["fan"]}, goto=[Send("leaf", {"x": 1, "log": []})])

    def leaf(state: State) -> dict[str, Any]:
        return {"log": [f"leaf{state['x']}"]}

    builder = StateGraph(State).add_node("fan", fan, cache_policy=CachePolicy()).add_node("leaf", leaf)
    builder.add_edge(START, "fan")
    with SqliteCache(path=str(tmp_path / "cache.db")) as cache:
        graph = builder.compile(cache=cache)
        assert graph.invoke({"x": 0, "log": []})["log"] == ["fan", "leaf1"]
        assert graph.invoke({"x": 0, "log": []})["log"] == ["fan", "leaf1"]
    assert calls == ["fan"]


def test_sqlite_cache_is_shared_by_separate_graphs(tmp_path: pathlib.Path) -> None:
    calls: list[int] = []
    path = str(tmp_path / "cache.db")
    with SqliteCache(path=path) as cache:
        _graph(calls).compile(cache=cache).invoke({"x": 7, "log": []})
    with SqliteCache(path=path) as cache:
        out = _graph(calls).compile(cache=cache, checkpointer=InMemorySaver())
        assert out.invoke({"x": 7, "log": []}, {"configurable": {"thread_id": "t"}})["log"] == ["a7", "b"]
    assert calls == [7]
