"""``run.lifecycle`` and ``run.subgraphs`` of v3 runs, read off the ``tasks`` events of real graphs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, MessagesState, StateGraph
from plait.stream import (
    AsyncSubgraphRunStream,
    LifecyclePayload,
    ProtocolEvent,
    StreamChannel,
    SubgraphRunStream,
)
from plait.stream.transformers import _TasksLifecycleBase  # pyright: ignore[reportPrivateUsage]
from plait.types import Send, interrupt


class State(TypedDict, total=False):
    v: str
    tool_call: dict[str, Any]


def _chain(name: str, inner: Any = None, *, mode: str = "ok") -> Any:
    """A graph of one node ``name``: a function adding ``name[0]``, or the graph ``inner``."""

    def step(state: State) -> dict[str, Any]:
        if mode == "fail":
            raise ValueError("boom")
        if mode == "ask":
            interrupt("approve?")
        return {"v": state["v"] + name[0]}

    builder = StateGraph(State)
    builder.add_node(name, inner if inner is not None else step)
    builder.add_edge(START, name)
    builder.add_edge(name, END)
    return builder.compile()


def _parent(child: Any, *, checkpointer: Any = None) -> Any:
    builder = StateGraph(State)
    builder.add_node("pre", lambda _: {"v": "p"})
    builder.add_node("child", child)
    builder.add_edge(START, "pre")
    builder.add_edge("pre", "child")
    builder.add_edge("child", END)
    return builder.compile(checkpointer=checkpointer)


def _segment_names(payloads: list[LifecyclePayload]) -> list[tuple[str, list[str]]]:
    return [(p["event"], [s.split(":")[0] for s in p["namespace"]]) for p in payloads]


def test_a_subgraph_node_starts_and_completes() -> None:
    graph = _parent(_chain("inner"))
    events = list(graph.stream_events({"v": ""}, version="v3"))
    assert all(e["method"] != "tasks" for e in events)  # folded into the lifecycle
    lifecycle = [e for e in events if e["method"] == "lifecycle"]
    assert all(e["params"]["namespace"] == [] for e in lifecycle)
    started, done = (e["params"]["data"] for e in lifecycle)
    assert started["event"] == "started" and started["graph_name"] == "child"
    segment = started["namespace"][0]
    assert segment == f"child:{started['trigger_call_id']}"
    assert done == {"event": "completed", "namespace": [segment]}
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    # the lifecycle event comes after the subgraph's input state, before its next state
    methods = [(e["method"], len(e["params"]["namespace"])) for e in events]
    assert methods == [
        ("values", 0),
        ("values", 0),
        ("values", 1),
        ("lifecycle", 0),
        ("values", 1),
        ("lifecycle", 0),
        ("values", 0),
    ]


def test_lifecycle_reports_every_depth_and_handles_nest() -> None:
    graph = _parent(_chain("mid", _chain("leaf")))
    assert _segment_names(list(graph.stream_events({"v": ""}, version="v3").lifecycle)) == [
        ("started", ["child"]),
        ("started", ["child", "mid"]),
        ("completed", ["child", "mid"]),
        ("completed", ["child"]),
    ]
    run = graph.stream_events({"v": ""}, version="v3")
    seen: list[tuple[str, str | None, str]] = []
    for handle in run.subgraphs:
        assert isinstance(handle, SubgraphRunStream) and handle.status == "started"
        for grandchild in handle.subgraphs:
            seen.append((".".join(s.split(":")[0] for s in grandchild.path), grandchild.graph_name, ""))
            assert list(grandchild.values) == [{"v": "pl"}]
            seen[-1] = (*seen[-1][:2], grandchild.status)
        seen.append((handle.path[0].split(":")[0], handle.graph_name, handle.status))
        assert handle.output == {"v": "pl"} and not handle.interrupted
    assert seen == [("child.mid", "mid", "completed"), ("child", "child", "completed")]
    assert run.output == {"v": "pl"}


def test_a_handle_sees_only_its_subgraph() -> None:
    run = _parent(_chain("inner")).stream_events({"v": ""}, version="v3")
    handle = next(iter(run.subgraphs))
    events = list(handle)
    assert {tuple(e["params"]["namespace"]) for e in events} == {handle.path}
    numbers = [e["seq"] for e in events]  # the run's numbers: the handle's events are the run's
    assert numbers == sorted(numbers) and len(numbers) == len(set(numbers))
    assert handle.status == "completed" and handle.error is None


def test_a_failing_subgraph() -> None:
    graph = _parent(_chain("inner", mode="fail"))
    run = graph.stream_events({"v": ""}, version="v3")
    payloads: list[LifecyclePayload] = []
    with pytest.raises(ValueError, match="boom"):
        payloads.extend(run.lifecycle)
    assert _segment_names(payloads) == [("started", ["child"]), ("failed", ["child"])]
    assert payloads[1]["error"] == "boom"
    run = graph.stream_events({"v": ""}, version="v3")
    handles: list[SubgraphRunStream] = []
    with pytest.raises(ValueError, match="boom"):
        for handle in run.subgraphs:
            handles.append(handle)
            with pytest.raises(RuntimeError, match="boom"):  # the subgraph's view: it failed
                list(handle.values)
            assert (handle.status, handle.error) == ("failed", "boom")
            with pytest.raises(RuntimeError, match="boom"):
                handle.output  # noqa: B018
    assert len(handles) == 1


def test_an_interrupted_subgraph() -> None:
    graph = _parent(_chain("inner", mode="ask"), checkpointer=InMemorySaver())
    run = graph.stream_events({"v": ""}, {"configurable": {"thread_id": "a"}}, version="v3")
    assert _segment_names(list(run.lifecycle)) == [("started", ["child"]), ("interrupted", ["child"])]
    run = graph.stream_events({"v": ""}, {"configurable": {"thread_id": "b"}}, version="v3")
    for handle in run.subgraphs:
        assert list(handle.values) == [{"v": "p"}]
        assert handle.status == "interrupted" and handle.interrupted
        assert [i.value for i in handle.interrupts] == ["approve?"]
    assert run.interrupted


def _tool_dispatch(helper: Any) -> Any:
    """``agent`` sends a tool call to ``tools``, which invokes ``helper`` (a graph of its own)."""

    def tools(state: State) -> dict[str, Any]:
        return {"v": helper.invoke({"v": ""})["v"] + "t"}

    builder = StateGraph(State)
    builder.add_node("agent", lambda _: {"v": "a"})
    builder.add_node("tools", tools)
    builder.add_conditional_edges(
        "agent", lambda _: [Send("tools", {"tool_call": {"id": "call_1", "name": "x", "args": {}}})]
    )
    builder.add_edge("tools", END)
    builder.add_edge(START, "agent")
    return builder.compile().with_config({"metadata": {"lc_agent_name": "boss"}})


def test_an_agent_invoked_by_a_tool_is_named_and_caused_by_its_tool_call() -> None:
    helper = _chain("leaf").with_config({"metadata": {"lc_agent_name": "helper"}})
    payloads = list(_tool_dispatch(helper).stream_events({"v": ""}, version="v3").lifecycle)
    assert _segment_names(payloads) == [("started", ["tools"]), ("completed", ["tools"])]
    assert payloads[0]["graph_name"] == "helper"
    assert payloads[0]["cause"] == {"type": "toolCall", "tool_call_id": "call_1"}
    # a graph without a name of its own inherits its caller's
    plain = list(_tool_dispatch(_chain("leaf")).stream_events({"v": ""}, version="v3").lifecycle)
    assert plain[0]["graph_name"] == "boss"


class Agents(_TasksLifecycleBase):
    """A transformer of named nested runs, as LangChain's ``SubagentTransformer`` builds on the base."""

    _native = True
    supports_sync = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.log: StreamChannel[tuple[str, Any, Any]] = StreamChannel()

    def init(self) -> dict[str, Any]:
        return {"agents": self.log}

    def _should_track(self, ns: tuple[str, ...]) -> bool:
        return len(ns) == 1

    def _on_started(self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None) -> None:
        if self._lc_by_ns.get(ns) is not None:
            self.log.push(("started", graph_name, self._pending_cause))

    def _on_terminal(self, ns: tuple[str, ...], status: Any, error: str | None) -> None:
        self.log.push((status, ns[0].split(":")[0], error))

    async def aprocess(self, event: ProtocolEvent) -> bool:
        return self.process(event)


def test_the_base_serves_transformers_of_named_runs_in_sync_and_async_runs() -> None:
    helper = _chain("leaf").with_config({"metadata": {"lc_agent_name": "helper"}})
    graph = _tool_dispatch(helper)
    cause = {"type": "toolCall", "tool_call_id": "call_1"}
    expected = [("started", "helper", cause), ("completed", "tools", None)]
    assert list(graph.stream_events({"v": ""}, version="v3", transformers=[Agents]).agents) == expected

    async def main() -> list[Any]:
        run = await graph.astream_events({"v": ""}, version="v3", transformers=[Agents])
        return [item async for item in run.agents]

    assert asyncio.run(main()) == expected


def test_async_handles() -> None:
    graph = _parent(_chain("mid", _chain("leaf")))

    async def main() -> list[Any]:
        run = await graph.astream_events({"v": ""}, version="v3")
        seen: list[Any] = []
        async for handle in run.subgraphs:
            assert isinstance(handle, AsyncSubgraphRunStream)
            seen.append([v async for v in handle.values])
            seen.append((handle.status, await handle.output(), await handle.interrupted()))
        seen.append(await run.output())
        run = await graph.astream_events({"v": ""}, version="v3")
        seen.append(_segment_names([p async for p in run.lifecycle]))
        return seen

    assert asyncio.run(main()) == [
        [{"v": "pl"}],
        ("completed", {"v": "pl"}, False),
        {"v": "pl"},
        [
            ("started", ["child"]),
            ("started", ["child", "mid"]),
            ("completed", ["child", "mid"]),
            ("completed", ["child"]),
        ],
    ]


def test_async_failing_subgraph_fails_its_handle() -> None:
    graph = _parent(_chain("inner", mode="fail"))

    async def main() -> list[Any]:
        run = await graph.astream_events({"v": ""}, version="v3")
        handles: list[Any] = []
        with pytest.raises(ValueError, match="boom"):
            async for handle in run.subgraphs:
                handles.append(handle)
                with pytest.raises(RuntimeError, match="boom"):
                    await handle.output()
        return [(h.status, h.error) for h in handles]

    assert asyncio.run(main()) == [("failed", "boom")]


def _model_graph() -> Any:
    """A graph whose node calls a (langchain-core fake) streaming chat model."""
    model = GenericFakeChatModel(messages=iter([AIMessage(content="Hi bob, data.")]))
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    return builder.compile()


def _calling_a_model_graph(how: str) -> Any:
    """A graph whose node ``tools`` is, or invokes, a graph calling a model."""
    inner = _model_graph()

    def tools(_: Any) -> dict[str, Any]:
        inner.invoke({"messages": [HumanMessage("q")]})
        return {"messages": [AIMessage("done", id="done")]}

    builder = StateGraph(MessagesState)
    builder.add_node("tools", inner if how == "node" else tools)
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


@pytest.mark.parametrize("how", ["node", "invoked"])
def test_a_subgraph_streams_its_model_calls_as_protocol_events(how: str) -> None:
    kinds = [
        e["params"]["data"][0]["event"]
        for e in _calling_a_model_graph(how).stream_events({"messages": [HumanMessage("go")]}, version="v3")
        if e["method"] == "messages" and e["params"]["namespace"]
    ]
    assert kinds[0] == "message-start" and kinds[-1] == "message-finish" and "content-block-delta" in kinds
    run = _calling_a_model_graph(how).stream_events({"messages": [HumanMessage("go")]}, version="v3")
    texts = [str(stream.text) for handle in run.subgraphs for stream in handle.messages]
    assert texts == ["Hi bob, data."]
