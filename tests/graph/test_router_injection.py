"""Routers receive ``store``, ``writer``, ``runtime`` and ``config`` when they declare them, as LangGraph's do.

LangGraph coerces a conditional edge's function to a ``RunnableCallable``, which passes
these by keyword; libraries rely on it (langgraph-bigtool's ``should_continue(state, *, store)``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, StateGraph
from plait.graph._branch import router_extras
from plait.runtime import Runtime
from plait.store.base import BaseStore
from plait.store.memory import InMemoryStore
from plait.types import StreamWriter


class State(TypedDict):
    x: int


class Own(TypedDict):
    x: int


@dataclass
class Ctx:
    user: str = "nobody"


def _bump(state: State) -> dict[str, Any]:
    return {"x": state["x"] + 1}


def _graph(start_router: Any, router: Any, **compile_kw: Any) -> Any:
    builder = StateGraph(State, context_schema=Ctx)
    builder.add_node("a", _bump)
    builder.add_conditional_edges(START, start_router)
    builder.add_conditional_edges("a", router)
    return builder.compile(**compile_kw)


def test_routers_receive_store_writer_runtime_and_config() -> None:
    seen: list[tuple[Any, ...]] = []

    def start(
        state: State, *, store: BaseStore, writer: StreamWriter, runtime: Runtime[Ctx], config: Any
    ) -> str:
        seen.append((store, runtime.store, runtime.context, config["configurable"]["thread_id"]))
        writer({"from": "start"})
        return "a"

    def after_a(state: State, store: BaseStore, writer: StreamWriter, runtime: Runtime[Ctx]) -> str:
        seen.append((store, runtime.context, state["x"], runtime.execution_info.thread_id))
        writer({"from": "after_a"})
        return END

    store = InMemoryStore()
    graph = _graph(start, after_a, store=store, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    events = list(graph.stream({"x": 1}, config, context=Ctx("bob"), stream_mode="custom"))
    assert events == [{"from": "start"}, {"from": "after_a"}]
    assert seen == [(store, store, Ctx("bob"), "t1"), (store, Ctx("bob"), 2, "t1")]


def test_a_keyword_only_store_without_a_store_gets_none() -> None:
    """langgraph-bigtool's ``should_continue(state, *, store)`` on a graph compiled without a store."""
    stores: list[Any] = []

    def should_continue(state: State, *, store: BaseStore) -> str:
        stores.append(store)
        return "a" if state["x"] < 2 else END

    assert _graph(should_continue, should_continue).invoke({"x": 0}) == {"x": 2}
    assert stores == [None, None, None]


def test_async_routers_and_own_schema_routers_receive_them_too() -> None:
    seen: list[tuple[Any, ...]] = []

    async def start(state: State, *, store: BaseStore, runtime: Runtime[Ctx]) -> str:
        await asyncio.sleep(0)
        seen.append(("start", store is runtime.store, runtime.context.user))
        return "a"

    def after_a(state: Own, *, writer: StreamWriter, config: Any) -> str:
        seen.append(("after_a", type(state).__name__, config["configurable"]["user_id"]))
        writer({"x": state["x"]})
        return END

    graph = _graph(start, after_a, store=InMemoryStore())
    cfg = {"configurable": {"user_id": "u7"}}

    async def run() -> list[Any]:
        return [e async for e in graph.astream({"x": 1}, cfg, context=Ctx("al"), stream_mode="custom")]

    assert asyncio.run(run()) == [{"x": 2}]
    assert seen == [("start", True, "al"), ("after_a", "dict", "u7")]


def test_which_routers_take_extras_is_decided_at_compile_time() -> None:
    def plain(state: State) -> str:
        return END

    def with_config(state: State, config: Any) -> str:
        return END

    def store_kw(state: State, *, store: Any) -> str:
        return END

    def both(state: State, config: Any, writer: Any) -> str:
        return END

    def config_kw(state: State, *, config: Any) -> str:
        return "a" if isinstance(config, dict) else END

    def store_state(store: State) -> str:  # the state parameter is never injected
        return END

    assert [router_extras(f) for f in (plain, with_config, store_kw, both, config_kw, store_state)] == [
        (),
        (),
        ("store",),
        ("writer", "config"),
        ("config",),
        (),
    ]
    graph = _graph(with_config, both)
    branches = {b.source: b for bs in graph.plan.branches.values() for b in bs}
    assert branches[START].extras == () and branches[START].takes_config
    assert branches["a"].extras == ("writer", "config") and not branches["a"].takes_config
    assert _graph(config_kw, store_state).invoke({"x": 0}) == {"x": 1}
