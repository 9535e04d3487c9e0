"""InMemorySaver's async lease is taken on the event loop; a held thread is still waited for, refused
or given up exactly as the sync lease is, and a waiter cancelled mid-wait leaves the thread free.
An async run's saves go straight to put/put_writes, or through a subclass's overrides."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest

from plait.checkpoint.memory import InMemorySaver
from plait.errors import ThreadBusyError
from plait.graph import START, StateGraph

HANG = 60  # seconds: a hang guard only


class State(TypedDict):
    n: Annotated[int, operator.add]  # a run adds to what the thread holds


def _cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


async def test_a_free_thread_is_taken_on_the_loop_without_a_worker_thread() -> None:
    saver = InMemorySaver()
    seen: list[str] = []

    async def node(state: State) -> State:
        return {"n": 1}

    graph = StateGraph(State).add_node("a", node).add_edge(START, "a").compile(checkpointer=saver)
    real = asyncio.to_thread

    async def spy(fn: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args, **kwargs)

    asyncio.to_thread = spy  # type: ignore[assignment]
    try:
        assert await graph.ainvoke({"n": 0}, _cfg()) == {"n": 1}
    finally:
        asyncio.to_thread = real
    assert seen == []
    async with await saver.alease("t"):  # free again
        pass


async def _held(saver: InMemorySaver) -> tuple[Any, asyncio.Event, asyncio.Event]:
    """A run holding thread "t" until ``release`` is set; ``holding`` is set once it holds it."""
    holding, release = asyncio.Event(), asyncio.Event()

    async def slow(state: State) -> State:
        holding.set()
        await release.wait()
        return {"n": 1}

    graph = StateGraph(State).add_node("a", slow).add_edge(START, "a").compile(checkpointer=saver)
    return graph, holding, release


async def test_a_second_run_waits_for_the_holder_then_runs_after_it() -> None:
    saver = InMemorySaver()
    graph, holding, release = await _held(saver)
    first = asyncio.ensure_future(graph.ainvoke({"n": 0}, _cfg()))
    await asyncio.wait_for(holding.wait(), HANG)
    holding.clear()
    second = asyncio.ensure_future(graph.ainvoke({"n": 10}, _cfg()))
    await asyncio.sleep(0)
    assert not second.done() and not holding.is_set()
    release.set()
    assert await asyncio.wait_for(first, HANG) == {"n": 1}
    assert await asyncio.wait_for(second, HANG) == {"n": 12}  # it started from the first run's state


async def test_reject_and_timeout_on_a_held_thread_raise_thread_busy() -> None:
    saver = InMemorySaver()
    graph, holding, release = await _held(saver)
    first = asyncio.ensure_future(graph.ainvoke({"n": 0}, _cfg()))
    await asyncio.wait_for(holding.wait(), HANG)
    with pytest.raises(ThreadBusyError, match="busy"):
        await graph.ainvoke({"n": 5}, _cfg(), multitask_strategy="reject")
    with pytest.raises(ThreadBusyError, match="busy"):
        await graph.ainvoke({"n": 5}, _cfg(), lease_timeout=0.05)
    release.set()
    assert await asyncio.wait_for(first, HANG) == {"n": 1}
    async with await saver.alease("t", wait=False):  # nothing left holding it
        pass


async def test_a_waiter_cancelled_while_waiting_leaves_the_thread_free() -> None:
    saver = InMemorySaver()
    graph, holding, release = await _held(saver)
    first = asyncio.ensure_future(graph.ainvoke({"n": 0}, _cfg()))
    await asyncio.wait_for(holding.wait(), HANG)
    waiter = asyncio.ensure_future(_enter(saver))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    release.set()
    assert await asyncio.wait_for(first, HANG) == {"n": 1}
    # the cancelled waiter's worker thread may take the lock once the holder lets go: it gives it back
    await asyncio.wait_for(_take(saver), HANG)


async def _take(saver: InMemorySaver) -> None:
    async with await saver.alease("t"):
        pass


async def _enter(saver: InMemorySaver) -> None:
    async with await saver.alease("t"):
        raise AssertionError("entered a held thread")


async def test_an_async_run_waits_for_a_sync_run_on_another_thread() -> None:
    saver = InMemorySaver()
    inside, release = threading.Event(), threading.Event()

    def slow(state: State) -> State:
        inside.set()
        release.wait(HANG)
        return {"n": 1}

    graph = StateGraph(State).add_node("a", slow).add_edge(START, "a").compile(checkpointer=saver)
    sync_run = threading.Thread(target=graph.invoke, args=({"n": 0}, _cfg()))
    sync_run.start()
    assert await asyncio.to_thread(inside.wait, HANG)
    inside.clear()
    waiting = asyncio.ensure_future(graph.ainvoke({"n": 10}, _cfg()))
    await asyncio.sleep(0)
    assert not waiting.done() and not inside.is_set()
    release.set()
    assert await asyncio.wait_for(waiting, HANG) == {"n": 12}
    sync_run.join(HANG)


async def test_async_runs_call_a_subclass_override_of_put_or_aput() -> None:
    calls: list[str] = []

    class LangGraphStyle(InMemorySaver):  # LangGraph's put signature: no expected_head
        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:  # type: ignore[override]
            calls.append(f"put:{metadata['source']}")
            return super().put(config, checkpoint, metadata, new_versions)

        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            calls.append("writes")
            super().put_writes(config, writes, task_id, task_path)

    class AsyncOwn(InMemorySaver):
        async def aput(
            self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any, **kw: Any
        ) -> Any:
            calls.append("aput")
            return await super().aput(config, checkpoint, metadata, new_versions, **kw)

    async def node(state: State) -> State:
        return {"n": 1}

    for saver in (LangGraphStyle(), AsyncOwn()):
        graph = StateGraph(State).add_node("a", node).add_edge(START, "a").compile(checkpointer=saver)
        assert await graph.ainvoke({"n": 0}, _cfg()) == {"n": 1}
        assert (await graph.aget_state(_cfg())).values == {"n": 1}
    assert calls == ["put:input", "writes", "put:loop", "writes", "put:loop", "aput", "aput", "aput"]
