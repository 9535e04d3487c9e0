"""How pauses show in a stream: questions as their tasks stop, breakpoints inside subgraphs at
the top only, replayed writes first when a step resumes, and messages once across a resume."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, Literal

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from plait.graph import START, StateGraph
from plait.graph.message import add_messages
from plait.types import Command, interrupt


class Text(TypedDict):
    a: Annotated[str, operator.add]


def _shown(chunk: Any) -> Any:
    """A stream chunk with interrupts as their values and namespaces as node names."""
    ns, mode, payload = chunk
    if isinstance(payload, dict) and "__interrupt__" in payload:
        payload = {**payload, "__interrupt__": [i.value for i in payload["__interrupt__"]]}
    return tuple(part.split(":")[0] for part in ns), mode, payload


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_breakpoint_inside_a_subgraph_is_reported_by_the_top_run_only(
    driver: Any, any_saver: Any, where: str
) -> None:
    inner = (
        StateGraph(Text)
        .add_node("i1", lambda s: {"a": "1"})
        .add_node("i2", lambda s: {"a": "2"})
        .add_edge(START, "i1")
        .add_edge("i1", "i2")
        .compile(**{f"interrupt_{where}": ["i1" if where == "after" else "i2"]})
    )
    graph = StateGraph(Text).add_node("inner", inner).add_edge(START, "inner").compile(checkpointer=any_saver)
    config = {"configurable": {"thread_id": where}}
    chunks = driver.stream(graph, {"a": ""}, config, subgraphs=True, stream_mode=["updates", "values"])
    assert [_shown(c) for c in chunks] == [
        ((), "values", {"a": ""}),
        (("inner",), "values", {"a": ""}),
        (("inner",), "updates", {"i1": {"a": "1"}}),
        (("inner",), "values", {"a": "1"}),
        ((), "updates", {"__interrupt__": []}),  # no question: nothing under the subgraph's namespace
    ]
    (task,) = graph.get_state(config).tasks
    assert task.interrupts == () and graph.get_state(config).interrupts == ()
    assert driver.invoke(graph, None, config) == {"a": "12"}


def _stream_seeing(driver: Any, graph: Any, input: Any, config: Any, see: Any, **kwargs: Any) -> list[Any]:  # noqa: A002
    """``driver.stream``, calling ``see`` with each chunk as it arrives (the run goes on meanwhile)."""
    if driver.kind == "sync":
        return [see(c) or c for c in graph.stream(input, config, **kwargs)]

    async def collect() -> list[Any]:
        return [see(c) or c async for c in graph.astream(input, config, **kwargs)]

    return asyncio.run(collect())


def test_each_task_s_questions_stream_as_it_stops(driver: Any, any_saver: Any) -> None:
    """Three tasks of one step end in turn: "ask1" asks at once, "p" ends once the caller has that
    question, "ask2" asks once the caller has what "p" wrote (on resuming: what "ask1" wrote). Each
    waits a minute at most. The "custom" mode (nothing is written to it) streams the step live, so
    the caller has each chunk while the step still runs."""
    shown: dict[str, threading.Event] = {k: threading.Event() for k in ("q1", "p", "ask1")}
    ask2_after = ["p"]

    def see(chunk: Any) -> None:
        mode, payload = chunk
        if mode == "updates":
            for key in [i.value for i in payload.get("__interrupt__", ())] + list(payload):
                if key in shown:
                    shown[key].set()

    def ask(question: str, after: list[str]) -> Any:
        def node(state: Text) -> dict[str, Any]:
            for key in after:
                shown[key].wait(60)
            return {"a": interrupt(question)}

        return node

    def slow(state: Text) -> dict[str, Any]:
        shown["q1"].wait(60)
        return {"a": "p"}

    graph = (
        StateGraph(Text)
        .add_node("ask1", ask("q1", []))
        .add_node("ask2", ask("q2", ask2_after))
        .add_node("p", slow)
        .add_edge(START, "ask1")
        .add_edge(START, "ask2")
        .add_edge(START, "p")
        .compile(checkpointer=any_saver)
    )
    config = {"configurable": {"thread_id": "par"}}
    modes = ["updates", "values", "custom"]
    chunks = _stream_seeing(driver, graph, {"a": ""}, config, see, stream_mode=modes)
    assert [_shown(((),) + c) for c in chunks] == [
        ((), "values", {"a": ""}),
        ((), "updates", {"__interrupt__": ["q1"]}),
        ((), "values", {"a": "", "__interrupt__": ["q1"]}),
        ((), "updates", {"p": {"a": "p"}}),
        ((), "updates", {"__interrupt__": ["q2"]}),
        ((), "values", {"a": "", "__interrupt__": ["q2"]}),
        ((), "values", {"a": "p"}),
    ]
    ids = {i.value: i.id for i in graph.get_state(config).interrupts}
    # resuming: the writes of the task that had finished come first, then what runs now
    ask2_after[:] = ["ask1"]
    resume = Command(resume={ids["q1"]: "A"})
    again = _stream_seeing(driver, graph, resume, config, see, stream_mode=["updates", "custom"])
    assert [_shown(((),) + c)[2] for c in again] == [
        {"p": {"a": "p"}, "__metadata__": {"cached": True}},
        {"ask1": {"a": "A"}},
        {"__interrupt__": ["q2"]},
    ]


def test_one_resume_value_answers_the_next_question_when_none_is_pending(driver: Any, any_saver: Any) -> None:
    class Two(TypedDict):
        bar: str
        baz: str

    graph = (
        StateGraph(Two)
        .add_node("ask", lambda s: {"baz": interrupt("baz?")})
        .add_node("join", lambda s: {"bar": s["bar"] + s["baz"]})
        .add_edge(START, "ask")
        .add_edge("ask", "join")
        .compile(checkpointer=any_saver)
    )
    config = {"configurable": {"thread_id": "moved"}}
    driver.invoke(graph, {"bar": "hi "}, config)
    driver.update_state(graph, config, {"bar": "yo "})  # a new checkpoint: no question pending on it
    assert graph.get_state(config).next == ("ask",) and graph.get_state(config).interrupts == ()
    assert driver.invoke(graph, Command(resume="baz"), config) == {"bar": "yo baz", "baz": "baz"}


def test_messages_stream_once_across_a_resumed_subgraph(driver: Any, any_saver: Any) -> None:
    class Chat(BaseModel):
        messages: Annotated[list[AnyMessage], add_messages] = Field(default_factory=list)

    def propose(state: Chat) -> Command[Literal["approve"]]:
        return Command(goto="approve", update={"messages": [AIMessage("Proposal", id="proposal")]})

    def approve(state: Chat) -> dict[str, Any]:
        return {"messages": [HumanMessage(interrupt("ok?"), id="answer")]}

    sub = (
        StateGraph(Chat)
        .add_node("propose", propose)
        .add_node("approve", approve)
        .add_edge(START, "propose")
        .compile(checkpointer=any_saver)
    )

    def finalize(state: Chat) -> dict[str, Any]:
        return {"messages": [AIMessage("Done", id="done")]}

    graph = (
        StateGraph(Chat)
        .add_node("sub", sub)
        .add_node("finalize", finalize)
        .add_edge(START, "sub")
        .add_edge("sub", "finalize")
        .compile(checkpointer=any_saver)
    )
    config = {"configurable": {"thread_id": "chat"}}

    def ids(chunks: list[Any]) -> list[str]:
        return [message.id for _, (message, _) in chunks]

    first = driver.stream(
        graph, {"messages": [HumanMessage("hi", id="hi")]}, config, stream_mode="messages", subgraphs=True
    )
    assert ids(first) == ["proposal"]
    second = driver.stream(graph, Command(resume="yes"), config, stream_mode="messages", subgraphs=True)
    assert ids(second) == ["answer", "done"]  # the subgraph's earlier messages do not show again
