"""``stream_mode="values"`` around resumes: the state a run resumes from comes first, an empty input is not a state."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import START, StateGraph
from plait.types import Command, interrupt


class State(TypedDict, total=False):
    a: str
    b: str


def _asking() -> Any:
    def ask(state: State) -> State:
        return {"b": interrupt("q")}

    return (
        StateGraph(State)
        .add_node("first", lambda s: {"a": "x"})
        .add_node("ask", ask)
        .add_edge(START, "first")
        .add_edge("first", "ask")
        .compile(checkpointer=InMemorySaver())
    )


def test_an_input_that_sets_nothing_is_not_streamed() -> None:
    events = list(_asking().stream({}, {"configurable": {"thread_id": "t"}}, stream_mode="values"))
    assert events[0] == {"a": "x"} and "__interrupt__" in events[1] and len(events) == 2


def test_a_resume_streams_the_state_it_resumes_from_then_the_steps() -> None:
    graph, config = _asking(), {"configurable": {"thread_id": "t"}}
    list(graph.stream({"a": "in"}, config))
    assert list(graph.stream(Command(resume="r"), config, stream_mode="values")) == [
        {"a": "x"},
        {"a": "x", "b": "r"},
    ]
    assert list(graph.stream(None, config, stream_mode="values")) == [
        {"a": "x", "b": "r"}
    ]  # nothing left to run


def test_a_resume_with_an_update_streams_the_updated_state_first() -> None:
    graph, config = _asking(), {"configurable": {"thread_id": "t"}}
    list(graph.stream({"a": "in"}, config))
    events = list(graph.stream(Command(update={"b": "u"}, resume="r"), config, stream_mode="values"))
    assert events == [{"a": "x", "b": "u"}, {"a": "x", "b": "r"}]


def test_invoke_none_after_a_breakpoint_streams_the_paused_state_first() -> None:
    graph = (
        StateGraph(State)
        .add_node("first", lambda s: {"a": "x"})
        .add_node("last", lambda s: {"b": "z"})
        .add_edge(START, "first")
        .add_edge("first", "last")
        .compile(checkpointer=InMemorySaver(), interrupt_before=["last"])
    )
    config = {"configurable": {"thread_id": "t"}}
    assert list(graph.stream({"a": "q"}, config, stream_mode="values")) == [{"a": "q"}, {"a": "x"}]
    assert list(graph.stream(None, config, stream_mode="values")) == [{"a": "x"}, {"a": "x", "b": "z"}]
