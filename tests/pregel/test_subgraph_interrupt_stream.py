"""How pauses show in a stream: questions as their tasks stop, breakpoints inside subgraphs at
the top only, replayed writes first when a step resumes, and messages once across a resume."""

from __future__ import annotations

import operator
import time
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


def test_each_task_s_questions_stream_as_it_stops(driver: Any, any_saver: Any) -> None:
    def ask(question: str, delay: float) -> Any:
        def node(state: Text) -> dict[str, Any]:
            time.sleep(delay)
            return {"a": interrupt(question)}

        return node

    def slow(state: Text) -> dict[str, Any]:
        time.sleep(0.25)
        return {"a": "p"}

    graph = (
        StateGraph(Text)
        .add_node("ask1", ask("q1", 0.0))
        .add_node("ask2", ask("q2", 0.5))
        .add_node("p", slow)
        .add_edge(START, "ask1")
        .add_edge(START, "ask2")
        .add_edge(START, "p")
        .compile(checkpointer=any_saver)
    )
    config = {"configurable": {"thread_id": "par"}}
    chunks = driver.stream(graph, {"a": ""}, config, stream_mode=["updates", "values"])
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
    again = driver.stream(graph, Command(resume={ids["q1"]: "A"}), config, stream_mode="updates")
    assert [_shown(((), "updates", c))[2] for c in again] == [
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
