"""A finished run is freed by reference counting: nothing it built is left for the cyclic garbage
collector (whose passes, with thousands of runs a second, cost more than the runs' own work)."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from plait.checkpoint.memory import InMemorySaver
from plait.graph import START, MessagesState, StateGraph
from plait.types import Command, interrupt


@pytest.fixture(autouse=True)
def _quiet_collector() -> Iterator[None]:
    gc.collect()
    yield
    gc.set_debug(0)
    gc.garbage.clear()


_RUN_MODULES = ("plait.pregel.", "plait.graph.", "plait.runtime", "plait.stream.")


def _plait_objects(garbage: list[Any]) -> Counter[str]:
    """The types of the run machinery's objects in ``garbage`` (a run's cycles hold its loop, sink
    or tasks; other garbage, say a saver another test left, is not the run's)."""
    return Counter(
        type(o).__qualname__
        for o in garbage
        if (getattr(type(o), "__module__", None) or "").startswith(_RUN_MODULES)
    )


def _cyclic_garbage(run: Callable[[], Any]) -> Counter[str]:
    """The types of what ``run()`` leaves in reference cycles (after two runs that warm caches up).

    The fewest of three tries: what other tests left behind (a pool thread letting go of its last
    task) may turn to garbage during one of them.
    """
    run()
    run()
    tries: list[Counter[str]] = []
    for _ in range(3):
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            run()
            gc.collect()
            tries.append(_plait_objects(gc.garbage))
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    return min(tries, key=lambda found: found.total())


def _chat_graph(checkpointer: Any = None, sync: bool = True) -> Any:
    model = GenericFakeChatModel(messages=iter([AIMessage("hello there friend")] * 100))

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def achat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState).add_node("chat", chat if sync else achat).add_edge(START, "chat")
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("mode", [None, "values", "updates", "messages", "custom", "debug"])
def test_a_sync_run_leaves_no_cycles(mode: str | None) -> None:
    graph = _chat_graph()
    inp = {"messages": [HumanMessage("hi")]}
    run: Callable[[], Any] = (
        (lambda: graph.invoke(inp)) if mode is None else (lambda: list(graph.stream(inp, stream_mode=mode)))
    )
    assert _cyclic_garbage(run) == Counter()


async def _acyclic_garbage(run: Callable[[], Awaitable[Any]]) -> Counter[str]:
    """:func:`_cyclic_garbage` of an async run, on the running event loop."""
    await run()
    await run()
    tries: list[Counter[str]] = []
    for _ in range(3):
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            await run()
            gc.collect()
            tries.append(_plait_objects(gc.garbage))
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    return min(tries, key=lambda found: found.total())


@pytest.mark.parametrize("mode", [None, "values", "updates", "messages"])
async def test_an_async_run_with_a_saver_leaves_no_cycles(mode: str | None) -> None:
    graph = _chat_graph(InMemorySaver(), sync=False)
    threads = iter(range(100))

    async def once() -> Any:
        cfg = {"configurable": {"thread_id": f"t{next(threads)}"}}
        inp = {"messages": [HumanMessage("hi")]}
        if mode is None:
            return await graph.ainvoke(inp, cfg)
        return [e async for e in graph.astream(inp, cfg, stream_mode=mode)]

    assert await _acyclic_garbage(once) == Counter()


def test_an_interrupt_and_its_resume_leave_no_cycles() -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [HumanMessage(interrupt("name?"))]}

    graph = (
        StateGraph(MessagesState)
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .compile(checkpointer=InMemorySaver())
    )
    threads = iter(range(100))

    def pair() -> None:
        cfg = {"configurable": {"thread_id": f"t{next(threads)}"}}
        assert "__interrupt__" in graph.invoke({"messages": []}, cfg)
        graph.invoke(Command(resume="ada"), cfg)

    assert _cyclic_garbage(pair) == Counter()
