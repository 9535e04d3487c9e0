"""stream_events / astream_events(version="v3") on real graphs: projections, output, errors, abort."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.config import get_stream_writer
from plait.graph import END, START, StateGraph
from plait.stream import (
    AsyncGraphRunStream,
    CheckpointsTransformer,
    CustomTransformer,
    DebugTransformer,
    GraphRunStream,
    LifecycleTransformer,
    ProtocolEvent,
    StreamChannel,
    StreamTransformer,
    TasksTransformer,
    UpdatesTransformer,
)
from plait.types import interrupt


class State(TypedDict):
    value: str
    items: Annotated[list[str], operator.add]


INPUT: State = {"value": "x", "items": []}


def _graph(*, fail: bool = False, ask: bool = False, checkpointer: Any = None, **compile_kwargs: Any) -> Any:
    def node_a(state: State) -> dict[str, Any]:
        get_stream_writer()({"step": "a"})
        return {"value": state["value"] + "A", "items": ["a"]}

    def node_b(state: State) -> dict[str, Any]:
        if fail:
            raise ValueError("boom")
        if ask:
            interrupt("need approval")
        return {"value": state["value"] + "B", "items": ["b"]}

    builder = StateGraph(State)
    builder.add_node("node_a", node_a)
    builder.add_node("node_b", node_b)
    builder.add_edge(START, "node_a")
    builder.add_edge("node_a", "node_b")
    builder.add_edge("node_b", END)
    return builder.compile(checkpointer=checkpointer, **compile_kwargs)


class Counter(StreamTransformer):
    """A non-native projection: counts root ``values`` events (in ``run.extensions`` only)."""

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.log: StreamChannel[int] = StreamChannel("counter")
        self.count = 0

    def init(self) -> dict[str, Any]:
        return {"counter": self.log}

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] == "values":
            self.count += 1
            self.log.push(self.count)
        return True


def test_values_output_and_raw_events() -> None:
    run = _graph().stream_events(INPUT, version="v3")
    assert isinstance(run, GraphRunStream)
    assert [s["value"] for s in run.values] == ["x", "xA", "xAB"]
    assert run.output == {"value": "xAB", "items": ["a", "b"]}
    assert run.interrupted is False and run.interrupts == []

    events = list(_graph().stream_events(INPUT, version="v3"))
    assert {e["method"] for e in events} == {"values"}  # custom is not asked for
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(isinstance(e["params"]["timestamp"], int) for e in events)


def test_extensions_are_read_only_and_natives_are_attributes() -> None:
    run = _graph().stream_events(INPUT, version="v3", transformers=[Counter, UpdatesTransformer])
    assert run.values is run.extensions["values"] and run.updates is run.extensions["updates"]
    assert "counter" in run.extensions and not hasattr(run, "counter")
    with pytest.raises(TypeError):
        run.extensions["x"] = 1  # type: ignore[index]
    with pytest.raises(AttributeError, match="marker"):
        run.marker  # noqa: B018
    assert run.lifecycle is run.extensions["lifecycle"] and run.subgraphs is run.extensions["subgraphs"]
    counts = iter(run.extensions["counter"])
    assert run.output is not None
    assert list(counts) == [1, 2, 3]
    forwarded = [
        e
        for e in _graph().stream_events(INPUT, version="v3", transformers=[Counter])
        if "custom" in e["method"]
    ]
    assert [e["params"]["data"] for e in forwarded] == [1, 2, 3]


def test_raw_mode_transformers_are_opt_in() -> None:
    run = _graph(checkpointer=InMemorySaver()).stream_events(
        INPUT,
        {"configurable": {"thread_id": "t"}},
        version="v3",
        transformers=[
            CustomTransformer,
            UpdatesTransformer,
            TasksTransformer,
            DebugTransformer,
            CheckpointsTransformer,
        ],
    )
    seen: dict[str, list[Any]] = {}
    for name, item in run.interleave("custom", "updates", "tasks", "debug", "checkpoints"):
        seen.setdefault(name, []).append(item)
    assert seen["custom"] == [{"step": "a"}]
    assert [next(iter(u)) for u in seen["updates"]] == ["node_a", "node_b"]
    assert {t["name"] for t in seen["tasks"]} == {"node_a", "node_b"}
    assert {d["type"] for d in seen["debug"]} >= {"checkpoint", "task", "task_result"}
    assert len(seen["checkpoints"]) >= 3
    assert run.extensions["custom"]._subscribed is False  # interleave lets go when done
    with pytest.raises(KeyError):
        list(_graph().stream_events(INPUT, version="v3").interleave("values", "nope"))


def test_compile_time_transformers_join_every_run() -> None:
    graph = _graph(transformers=[CustomTransformer])
    assert list(graph.stream_events(INPUT, version="v3").custom) == [{"step": "a"}]
    assert list(graph.with_config({"tags": ["t"]}).stream_events(INPUT, version="v3").custom) == [
        {"step": "a"}
    ]


def test_argument_errors() -> None:
    graph = _graph()
    with pytest.raises(TypeError, match="pre-built instance"):
        graph.stream_events(INPUT, version="v3", transformers=[Counter()])
    with pytest.raises(TypeError, match="stream_mode"):
        graph.stream_events(INPUT, version="v3", stream_mode="values")
    with pytest.raises(TypeError, match="subgraphs"):
        graph.stream_events(INPUT, version="v3", subgraphs=True)
    with pytest.raises(ValueError, match="'lifecycle' is already provided by LifecycleTransformer"):
        graph.stream_events(INPUT, version="v3", transformers=[LifecycleTransformer])  # built in
    with pytest.raises(NotImplementedError):  # LangChain's own: no sync v1/v2 event stream
        graph.stream_events(INPUT, version="v2")


def test_errors_reach_every_consumer() -> None:
    for read in (
        lambda run: run.output,
        lambda run: list(run.values),
        lambda run: list(run),
        lambda run: run.interrupted,
    ):
        with pytest.raises(ValueError, match="boom"):
            read(_graph(fail=True).stream_events(INPUT, version="v3"))
    run = _graph(fail=True).stream_events(INPUT, version="v3")
    seen = []
    with pytest.raises(ValueError, match="boom"):
        for snapshot in run.values:
            seen.append(snapshot["value"])
    assert seen == ["x", "xA"]


def test_interrupts_and_resume() -> None:
    graph = _graph(ask=True, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "ask"}}
    run = graph.stream_events(INPUT, config, version="v3")
    assert run.output == {"value": "xA", "items": ["a"]}
    assert run.interrupted is True
    assert [i.value for i in run.interrupts] == ["need approval"]
    parts = list(
        graph.stream(INPUT, {"configurable": {"thread_id": "v2"}}, stream_mode="values", version="v2")
    )
    assert "__interrupt__" not in parts[-1]["data"] and parts[-1]["interrupts"][0].value == "need approval"


def test_context_and_run_options_are_forwarded() -> None:
    graph = _graph(checkpointer=InMemorySaver())
    run = graph.stream_events(
        INPUT, {"configurable": {"thread_id": "b"}}, version="v3", interrupt_before=["node_b"]
    )
    assert run.output == {"value": "xA", "items": ["a"]}
    assert graph.get_state({"configurable": {"thread_id": "b"}}).next == ("node_b",)


def test_abort_and_context_manager() -> None:
    run = _graph().stream_events(INPUT, version="v3")
    values = iter(run.values)
    assert next(values)["value"] == "x"
    run.abort()
    assert list(values) == []
    assert run._exhausted is True
    run.abort()
    with _graph().stream_events(INPUT, version="v3") as managed:
        next(iter(managed.values))
    assert managed._exhausted is True


def test_unread_projections_keep_nothing() -> None:
    run = _graph().stream_events(INPUT, version="v3")
    for _ in run:
        assert len(run._mux._events._items) == 0
    assert len(run.values._items) == 0 and not run.values._subscribed


async def test_async_run() -> None:
    run = await _graph().astream_events(INPUT, version="v3", transformers=[CustomTransformer])
    assert isinstance(run, AsyncGraphRunStream)
    custom = run.custom.__aiter__()
    assert [s["value"] async for s in run.values] == ["x", "xA", "xAB"]
    assert [c async for c in custom] == [{"step": "a"}]
    assert await run.output() == {"value": "xAB", "items": ["a", "b"]}
    assert await run.interrupted() is False

    failing = await _graph(fail=True).astream_events(INPUT, version="v3")
    with pytest.raises(ValueError, match="boom"):
        await failing.output()
    with pytest.raises(ValueError, match="boom"):
        async for _ in failing:
            pass


async def test_async_abort_cancels_the_step_in_flight() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    class Slow(TypedDict):
        count: int

    async def slow(state: Slow) -> dict[str, int]:
        started.set()
        try:
            await asyncio.Event().wait()  # until the abort cancels it
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {"count": 1}

    graph = StateGraph(Slow).add_node("slow", slow).set_entry_point("slow").compile()
    run = await graph.astream_events({"count": 0}, version="v3")

    async def consume() -> None:
        async for _ in run:
            pass

    consumer = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 60)  # (a minute: only so a broken run does not hang)
    await run.abort()
    await asyncio.wait_for(cancelled.wait(), 60)
    await asyncio.wait_for(consumer, 60)  # the run's log ended: the consumer finishes
    async with await _graph().astream_events(INPUT, version="v3") as managed:
        await anext(managed.values.__aiter__())
    assert managed._exhausted is True


async def test_async_scheduled_work_finishes_before_the_run_ends() -> None:
    class Scorer(StreamTransformer):
        requires_async = True

        def __init__(self, scope: tuple[str, ...] = ()) -> None:
            super().__init__(scope)
            self.log: StreamChannel[int] = StreamChannel()

        def init(self) -> dict[str, Any]:
            return {"scores": self.log}

        def process(self, event: ProtocolEvent) -> bool:
            if event["method"] == "values":

                async def work() -> None:
                    await asyncio.sleep(0.01)
                    self.log.push(42)

                self.schedule(work())
            return True

    with pytest.raises(RuntimeError, match="requires an async run"):
        _graph().stream_events(INPUT, version="v3", transformers=[Scorer])
    run = await _graph().astream_events(INPUT, version="v3", transformers=[Scorer])
    scores = run.extensions["scores"].__aiter__()
    await run.output()
    assert [s async for s in scores] == [42, 42, 42]
