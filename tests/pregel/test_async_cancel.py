"""Async runs cut short: cancellation, a closed stream, a failing sibling, ``step_timeout``.

Real asyncio tasks and real savers (memory, an async SQLite file). Tests wait on what the nodes
signal (started, cancelled), not on time; a node that must outlast the test waits until cancelled,
and :func:`_within` bounds a run only so a broken one fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import operator
import pathlib
import time
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Annotated, Any, TypedDict

import pytest

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite.aio import AsyncSqliteSaver
from plait.constants import START
from plait.graph import StateGraph


class S(TypedDict):
    value: Annotated[int, operator.add]


class Sleeper:
    """An async node that sleeps ``seconds`` (``None``: until cancelled), then writes ``value``; it
    records how it ended, and signals ``running`` as it starts."""

    def __init__(self, seconds: float | None = None, value: int | None = None) -> None:
        self.seconds, self.value = seconds, value
        self.started = self.cancelled = self.finished = False
        self.running = asyncio.Event()

    async def __call__(self, state: S) -> dict[str, int] | None:
        self.started = True
        self.running.set()
        try:
            if self.seconds is None:
                await asyncio.Event().wait()
            else:
                await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        self.finished = True
        return None if self.value is None else {"value": self.value}


@asynccontextmanager
async def _saver(kind: str, tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    if kind == "memory":
        yield InMemorySaver()
        return
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "threads.db")) as saver:
        yield saver


async def _within(awaitable: Any) -> Any:
    """``awaitable``'s result (or error); a minute at most, so a run that never ends fails the test
    (with an ``AssertionError``, not to be taken for the ``TimeoutError`` of a ``step_timeout``)."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait((task,), timeout=60)
    if not done:
        task.cancel()
        raise AssertionError("still running after a minute")
    return task.result()


def _parallel(*nodes: tuple[str, Any], checkpointer: Any = None) -> Any:
    g = StateGraph(S)
    for name, fn in nodes:
        g.add_node(name, fn)
        g.add_edge(START, name)
    return g.compile(checkpointer=checkpointer)


async def test_failing_node_cancels_its_running_sibling() -> None:
    slow = Sleeper()  # until cancelled

    async def bad(state: S) -> None:
        await slow.running.wait()
        raise ValueError("bad")

    graph = _parallel(("a_slow", slow), ("bad", bad))  # the sibling sorts first: its cancel is not the error
    with pytest.raises(ValueError, match="bad"):
        await _within(graph.ainvoke({"value": 1}))
    assert slow.cancelled and not slow.finished


async def test_interrupt_does_not_cancel_siblings() -> None:
    from plait.types import interrupt

    slow = Sleeper(0.2, 2)

    async def ask(state: S) -> None:
        interrupt("why?")

    graph = _parallel(("ask", ask), ("slow", slow), checkpointer=InMemorySaver())
    out = await graph.ainvoke({"value": 1}, {"configurable": {"thread_id": "t"}})
    assert slow.finished and not slow.cancelled
    assert out["value"] == 3 and "__interrupt__" in out


@pytest.mark.parametrize("durability", ["exit", "async", "sync"])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_cancelled_ainvoke_saves_the_step_in_flight(
    kind: str, durability: str, tmp_path: pathlib.Path
) -> None:
    node = Sleeper(None, 2)
    async with _saver(kind, tmp_path) as saver:
        g = StateGraph(S)
        g.add_node("agent", node)
        g.add_edge(START, "agent")
        graph = g.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        run = asyncio.create_task(graph.ainvoke({"value": 1}, config, durability=durability))
        await _within(node.running.wait())
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert node.cancelled
        state = await graph.aget_state(config)
        # the checkpoint before the step (held back until the end with durability="exit") is saved
        assert state.values == {"value": 1}
        assert state.next == ("agent",)
        assert state.metadata is not None and state.metadata["step"] == 0


async def test_cancelled_ainvoke_waits_for_its_last_save() -> None:
    log: list[str] = []

    class SlowSaver(InMemorySaver):
        async def aput(self, *args: Any, **kwargs: Any) -> Any:
            log.append("put")
            await asyncio.sleep(0.3)  # a slow save (the run is cancelled already: nothing waits on time)
            out = await super().aput(*args, **kwargs)
            log.append("put done")
            return out

    agent = Sleeper()
    g = StateGraph(S)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    graph = g.compile(checkpointer=SlowSaver())
    run = asyncio.create_task(
        graph.ainvoke({"value": 1}, {"configurable": {"thread_id": "t"}}, durability="exit")
    )
    await _within(agent.running.wait())
    run.cancel()
    assert log == []
    with pytest.raises(asyncio.CancelledError):
        await run
    assert log == ["put", "put done"]  # the cancellation did not cut the save short


async def test_cancelled_anext_saves_the_step_in_flight() -> None:
    saver = InMemorySaver()
    agent = Sleeper()
    g = StateGraph(S)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    graph = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    stream = graph.astream({"value": 1}, config, durability="exit")
    pending = asyncio.create_task(stream.__anext__())  # type: ignore[attr-defined]
    await _within(agent.running.wait())
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert (await graph.aget_state(config)).next == ("agent",)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_closing_astream_cancels_running_nodes_and_keeps_finished_writes(
    kind: str, tmp_path: pathlib.Path
) -> None:
    parallel, after = Sleeper(), Sleeper()

    async def quick(state: S) -> dict[str, int]:
        await parallel.running.wait()
        return {"value": 2}

    async with _saver(kind, tmp_path) as saver:
        g = StateGraph(S)
        g.add_node("quick", quick)
        g.add_node("parallel", parallel)
        g.add_node("after", after)
        g.add_edge(START, "quick")
        g.add_edge(START, "parallel")
        g.add_edge("quick", "after")
        graph = g.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}

        async def first() -> None:  # "parallel" never ends: closing the stream must not wait for it
            async with aclosing(graph.astream({"value": 1}, config)) as stream:
                async for chunk in stream:
                    assert chunk == {"quick": {"value": 2}}  # streamed as it finished, not at the step's end
                    break

        await _within(first())
        assert parallel.started and parallel.cancelled
        assert not after.started
        state = await graph.aget_state(config)
        assert state.values == {"value": 3}  # the finished task's write is kept (pending)
        assert state.next == ("parallel",)
        assert state.metadata is not None and state.metadata["step"] == 0
        assert {t.name: t.error for t in state.tasks} == {"parallel": "CancelledError()", "quick": None}
        # resuming runs the cancelled task again, not the finished one
        quick_again = Sleeper(0)
        parallel.seconds = after.seconds = 0
        g2 = StateGraph(S)
        g2.add_node("quick", quick_again)
        g2.add_node("parallel", parallel)
        g2.add_node("after", after)
        g2.add_edge(START, "quick")
        g2.add_edge(START, "parallel")
        g2.add_edge("quick", "after")
        assert await g2.compile(checkpointer=saver).ainvoke(None, config) == {"value": 3}
        assert not quick_again.started and after.finished


async def test_step_timeout_cancels_the_step() -> None:
    slow, quick = Sleeper(), Sleeper(0, 2)
    saver = InMemorySaver()
    graph = _parallel(("quick", quick), ("slow", slow), checkpointer=saver)
    graph.step_timeout = 1.0  # "quick" ends at once, "slow" never
    config = {"configurable": {"thread_id": "t"}}
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await _within(graph.ainvoke({"value": 1}, config))
    assert time.monotonic() - started >= 0.9  # not before its time (a lower bound: load only adds)
    assert slow.cancelled and quick.finished
    state = await graph.aget_state(config)
    assert state.values == {"value": 3}
    assert state.next == ("slow",)
    assert {t.name: t.error for t in state.tasks}["slow"] == "CancelledError()"


async def test_step_timeout_applies_to_a_single_task_and_each_step() -> None:
    g = StateGraph(S)
    for name in ("one", "two", "three"):
        g.add_node(name, Sleeper(0.35, 1))  # each step takes 0.35 s of work
    g.add_edge(START, "one").add_edge("one", "two").add_edge("two", "three")
    graph = g.compile()
    graph.step_timeout = 1.0  # per step (0.65 s to spare each): the three steps together take longer
    assert await graph.ainvoke({"value": 0}) == {"value": 3}
    node = Sleeper()  # never ends
    one = StateGraph(S).add_node("one", node).add_edge(START, "one").compile()
    one.step_timeout = 0.1
    with pytest.raises(asyncio.TimeoutError):  # a single task is timed too
        await _within(one.ainvoke({"value": 0}))
    assert node.cancelled


@pytest.mark.parametrize("hang", [False, True])
async def test_step_timeout_runs_while_the_consumer_hangs(hang: bool) -> None:
    slow, quick = Sleeper(), Sleeper(0, 1)  # "slow" never ends
    graph = _parallel(("quick", quick), ("slow", slow))
    graph.step_timeout = 1.0
    chunks = []
    cancelled = asyncio.Event()

    async def consume() -> None:
        async for chunk in graph.astream({"value": 0}, stream_mode="updates"):
            chunks.append(chunk)
            if hang:  # the step's clock keeps running meanwhile: it cancels "slow" while nothing reads
                while not slow.cancelled:
                    await asyncio.sleep(0.01)
                cancelled.set()

    with pytest.raises(asyncio.TimeoutError):
        await _within(consume())
    assert chunks == [{"quick": {"value": 1}}]
    assert slow.cancelled and cancelled.is_set() == hang


async def test_max_concurrency_with_step_timeout() -> None:
    running = 0
    peak = 0

    async def node(state: S) -> dict[str, int]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            await asyncio.sleep(0.1)
        finally:
            running -= 1
        return {"value": 1}

    graph = _parallel(*((f"n{i}", node) for i in range(6)))
    assert await graph.ainvoke({"value": 0}, {"max_concurrency": 2}) == {"value": 6}
    assert peak == 2
    graph.step_timeout = 0.15  # six tasks, two at a time: three rounds do not fit
    with pytest.raises(asyncio.TimeoutError):
        await graph.ainvoke({"value": 0}, {"max_concurrency": 2})
    assert running == 0


def test_thread_head_shows_what_finished_tasks_wrote_before_an_error() -> None:
    def bad(state: S) -> None:
        raise ValueError("bad")

    graph = _parallel(("bad", bad), ("ok", lambda state: {"value": 2}), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ValueError, match="bad"):
        graph.invoke({"value": 1}, config)
    head = graph.get_state(config)
    assert head.values == {"value": 3} and head.next == ("bad",)
    past = list(graph.get_state_history(config))[0]  # the record of the step: its values as it started
    assert past.values == {"value": 1} and set(past.next) == {"bad", "ok"}


async def test_closing_astream_between_steps_saves_the_held_back_checkpoint() -> None:
    async def one(state: S) -> dict[str, int]:
        return {"value": 1}

    g = StateGraph(S)
    g.add_node("one", one)
    g.add_node("two", Sleeper(None, 10))
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def first() -> None:
        async with aclosing(graph.astream({"value": 0}, config, durability="exit")) as stream:
            async for chunk in stream:
                assert chunk == {"one": {"value": 1}}
                break

    await _within(first())
    state = await graph.aget_state(config)
    assert state.values == {"value": 1} and state.next == ("two",)
