"""ToolNode's ``tools`` stream mode and ``run.tool_calls`` (ToolCallTransformer / ToolCallStream)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, StateGraph
from plait.graph.message import add_messages
from plait.prebuilt import ToolCallTransformer, ToolNode, ToolRuntime
from plait.prebuilt._tool_call_stream import ToolCallStream
from plait.types import Command, interrupt


class State(TypedDict):
    messages: Annotated[list[Any], add_messages]


@tool
def spell(word: str, runtime: ToolRuntime) -> str:
    """Streams the letters of a word."""
    for letter in word:
        runtime.emit_output_delta(letter)
    return word.upper()


@tool
def boom() -> str:
    """Raises."""
    raise ValueError("nope")


@tool
def ask(question: str) -> str:
    """Asks a human."""
    return str(interrupt(question))


@tool
def jump(runtime: ToolRuntime) -> Command[Any]:
    """Answers with a command."""
    return Command(update={"messages": [ToolMessage("jumped", tool_call_id=runtime.tool_call_id)]})


def _graph(calls: list[dict[str, Any]], tools: list[Any], **node_kwargs: Any) -> Any:
    def caller(state: State) -> dict[str, Any]:
        return {"messages": [AIMessage("", tool_calls=calls)]}

    builder = StateGraph(State)
    builder.add_node("caller", caller)
    builder.add_node("tools", ToolNode(tools, **node_kwargs))
    builder.add_edge(START, "caller")
    builder.add_edge("caller", "tools")
    builder.add_edge("tools", END)
    return builder.compile(checkpointer=InMemorySaver())


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id}


def _thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_tools_stream_mode_reports_each_call() -> None:
    graph = _graph([_call("spell", "c1", word="hi"), _call("jump", "c2")], [spell, jump])
    events = list(graph.stream({"messages": []}, _thread("a"), stream_mode="tools"))
    by_call: dict[str, list[str]] = {}
    for event in events:
        by_call.setdefault(event["tool_call_id"], []).append(event["event"])
    assert by_call == {
        "c1": ["tool-started", "tool-output-delta", "tool-output-delta", "tool-finished"],
        "c2": ["tool-started", "tool-finished"],
    }
    started = next(e for e in events if e["event"] == "tool-started" and e["tool_call_id"] == "c1")
    assert started["tool_name"] == "spell" and started["input"] == {"word": "hi"}  # no injected runtime
    finished = {e["tool_call_id"]: e["output"] for e in events if e["event"] == "tool-finished"}
    assert isinstance(finished["c1"], ToolMessage) and finished["c1"].content == "HI"
    assert isinstance(finished["c2"], Command)


def test_no_events_without_the_mode_or_for_unknown_tools() -> None:
    graph = _graph([_call("missing", "c1")], [spell])
    assert list(graph.stream({"messages": []}, _thread("b"), stream_mode="tools")) == []
    parts = list(graph.stream({"messages": []}, _thread("c"), stream_mode=["values", "updates"]))
    assert all(mode != "tools" for mode, _ in parts)


def test_an_interrupted_call_reports_no_end_and_runs_again_on_resume() -> None:
    graph = _graph([_call("ask", "c1", question="ok?")], [ask])
    first = list(graph.stream({"messages": []}, _thread("d"), stream_mode="tools"))
    assert [e["event"] for e in first] == ["tool-started"]
    resumed = list(graph.stream(Command(resume="yes"), _thread("d"), stream_mode="tools"))
    assert [e["event"] for e in resumed] == ["tool-started", "tool-finished"]
    assert resumed[-1]["output"].content == "yes"


def test_tools_invoked_directly_in_a_node_are_reported_too() -> None:
    @tool
    def shout(word: str) -> str:
        """Upper-cases a word."""
        return word.upper()

    class Plain(TypedDict):
        out: str

    def node(state: Plain) -> dict[str, Any]:
        bare = shout.invoke({"word": "no"})  # no model call: the tool run's id names it
        call = shout.invoke({"name": "shout", "args": {"word": "ok"}, "id": "c7", "type": "tool_call"})
        return {"out": bare + call.content}

    graph = StateGraph(Plain).add_node("node", node).add_edge(START, "node").add_edge("node", END).compile()
    events = list(graph.stream({"out": ""}, stream_mode="tools"))
    assert [e["event"] for e in events] == ["tool-started", "tool-finished"] * 2
    assert events[0]["tool_call_id"] != "c7" and events[2]["tool_call_id"] == "c7"
    assert events[1]["output"] == "NO" and events[3]["output"].content == "OK"


def test_emit_output_delta_is_harmless_outside_a_streamed_run() -> None:
    node = ToolNode([spell])
    out = node.invoke({"messages": [AIMessage("", tool_calls=[_call("spell", "c1", word="ok")])]})
    assert out["messages"][0].content == "OK"


def test_run_tool_calls_streams_each_call_with_its_deltas() -> None:
    graph = _graph([_call("spell", "c1", word="abc"), _call("jump", "c2")], [spell, jump])
    run = graph.stream_events(
        {"messages": []}, _thread("e"), version="v3", transformers=[ToolCallTransformer]
    )
    seen: list[tuple[str, list[Any], Any]] = []
    for call in run.tool_calls:
        assert isinstance(call, ToolCallStream)
        deltas = list(call.output_deltas)
        seen.append((call.tool_name, deltas, call.output))
        assert call.completed and call.error is None
    assert seen == [("spell", ["a", "b", "c"], "ABC"), ("jump", [], Command(update=seen[1][2].update))]
    assert repr(run.extensions["tool_calls"]).startswith("StreamChannel")


def test_handled_and_unhandled_tool_errors() -> None:
    handled = _graph([_call("boom", "c1")], [boom], handle_tool_errors=True)
    run = handled.stream_events(
        {"messages": []}, _thread("f"), version="v3", transformers=[ToolCallTransformer]
    )
    calls = list(run.tool_calls)
    assert [(c.error, c.output, c.completed) for c in calls] == [("nope", None, True)]
    assert "status=failed" in repr(calls[0])
    assert run.output is not None

    raising = _graph([_call("boom", "c1")], [boom])
    run = raising.stream_events(
        {"messages": []}, _thread("g"), version="v3", transformers=[ToolCallTransformer]
    )
    collected = []
    with pytest.raises(ValueError, match="nope"):
        for call in run.tool_calls:
            collected.append(call)
            list(call)
    assert [c.error for c in collected] == ["nope"]


def test_a_paused_call_ends_its_deltas_without_completing() -> None:
    graph = _graph([_call("ask", "c1", question="ok?")], [ask])
    run = graph.stream_events(
        {"messages": []}, _thread("h"), version="v3", transformers=[ToolCallTransformer]
    )
    calls = [(c, list(c.output_deltas)) for c in run.tool_calls]
    assert [(c.tool_name, c.completed, deltas) for c, deltas in calls] == [("ask", False, [])]
    assert run.interrupted is True


def test_compile_time_transformer_and_subgraph_scope() -> None:
    inner = _graph([_call("spell", "c1", word="xy")], [spell])
    builder = StateGraph(State)
    builder.add_node("inner", inner)
    builder.add_edge(START, "inner")
    builder.add_edge("inner", END)
    outer = builder.compile(transformers=[ToolCallTransformer])
    run = outer.stream_events({"messages": []}, version="v3")
    events = [e for e in run if e["method"] == "tools"]
    assert events and all(e["params"]["namespace"] for e in events)  # reported under the subgraph
    run = outer.stream_events({"messages": []}, version="v3")
    assert list(run.tool_calls) == []  # the root projection shows root calls only


async def test_async_tool_calls() -> None:
    @tool
    async def aspell(word: str, runtime: ToolRuntime) -> str:
        """Streams letters, asynchronously."""
        for letter in word:
            runtime.emit_output_delta(letter)
        return word

    graph = _graph([_call("aspell", "c1", word="go"), _call("spell", "c2", word="up")], [aspell, spell])
    run = await graph.astream_events(
        {"messages": []}, _thread("i"), version="v3", transformers=[ToolCallTransformer]
    )
    seen = {}
    async for call in run.tool_calls:
        seen[call.tool_call_id] = [d async for d in call]
    # c1's deltas are read as soon as c1 shows up; c2's may partly pass before anyone reads them
    assert seen["c1"] == ["g", "o"] and set(seen) == {"c1", "c2"}
    answers = {m.content for m in (await run.output())["messages"] if isinstance(m, ToolMessage)}
    assert answers == {"go", "UP"}
