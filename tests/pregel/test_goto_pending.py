"""``Command(goto=...)`` given to a paused thread adds to the step that was pending (LangGraph's
behaviour): the nodes a breakpoint or an interrupt held back still run."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import START, StateGraph
from plait.types import Command, Send, interrupt


class State(TypedDict):
    foo: Annotated[str, operator.add]


def _node(name: str, ask: bool = False) -> Any:
    def run(state: State) -> dict[str, Any]:
        if ask:
            return {"foo": f"|{name}={interrupt('q')}"}
        return {"foo": f"|{name}"}

    return run


def _chain(ask: bool = False, **kwargs: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("node1", _node("n1", ask)).add_node("node2", _node("n2")).add_node("node3", _node("n3"))
    builder.add_edge(START, "node1").add_edge("node1", "node2")
    return builder.compile(checkpointer=InMemorySaver(), **kwargs)


CONFIG = {"configurable": {"thread_id": "t"}}


def test_goto_at_a_static_breakpoint_runs_the_held_node_too(driver: Any) -> None:
    graph = _chain(interrupt_before=["node1"])
    assert driver.invoke(graph, {"foo": "abc"}, CONFIG) == {"foo": "abc"}
    # node1 (held) and node2 (goto) run in one step, then node1's edge runs node2 again
    assert driver.invoke(graph, Command(goto=["node2"]), CONFIG) == {"foo": "abc|n1|n2|n2"}


def test_goto_with_an_update_at_a_breakpoint(driver: Any) -> None:
    graph = _chain(interrupt_before=["node1"])
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    out = driver.invoke(graph, Command(goto="node2", update={"foo": "|u"}), CONFIG)
    assert out == {"foo": "abc|u|n1|n2|n2"}


def test_goto_after_interrupt_after_adds_to_the_next_nodes(driver: Any) -> None:
    graph = _chain(interrupt_after=["node1"])
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    assert driver.get_state(graph, CONFIG).next == ("node2",)
    assert driver.invoke(graph, Command(goto="node3"), CONFIG) == {"foo": "abc|n1|n2|n3"}


def test_goto_of_the_pending_node_runs_it_once(driver: Any) -> None:
    graph = _chain(interrupt_before=["node1"])
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    assert driver.invoke(graph, Command(goto="node1"), CONFIG) == {"foo": "abc|n1|n2"}


def test_resume_with_goto_resumes_the_interrupted_node_beside_the_goto(driver: Any) -> None:
    graph = _chain(ask=True)
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    assert driver.invoke(graph, Command(resume="x", goto="node3"), CONFIG) == {"foo": "abc|n1=x|n3|n2"}


def test_goto_without_resume_leaves_the_interrupted_node_pending(driver: Any) -> None:
    graph = _chain(ask=True)
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    out = driver.invoke(graph, Command(goto="node3"), CONFIG)
    assert out["foo"] == "abc|n3" and [i.value for i in out["__interrupt__"]] == ["q"]
    assert driver.get_state(graph, CONFIG).next == ("node1",)


def test_goto_on_a_finished_thread_runs_only_the_goto(driver: Any) -> None:
    graph = _chain()
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    assert driver.invoke(graph, Command(goto="node3"), CONFIG) == {"foo": "abc|n1|n2|n3"}


def _fan_out() -> Any:
    builder = StateGraph(State)
    builder.add_node("node1", _node("n1")).add_node("node2", _node("n2"))
    builder.add_node("node3", lambda s: {"foo": "|n3" + s["foo"]})
    builder.add_conditional_edges(START, lambda s: [Send("node3", {"foo": "A"}), Send("node3", {"foo": "B"})])
    builder.add_edge("node3", "node2")
    return builder.compile(checkpointer=InMemorySaver(), interrupt_before=["node3"])


def test_a_plain_goto_keeps_the_pending_sends(driver: Any) -> None:
    graph = _fan_out()
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    assert driver.invoke(graph, Command(goto="node1"), CONFIG) == {"foo": "abc|n1|n3A|n3B|n2"}


def test_a_goto_with_sends_replaces_the_pending_sends(driver: Any) -> None:
    graph = _fan_out()
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    out = driver.invoke(graph, Command(goto=[Send("node3", {"foo": "C"}), "node1"]), CONFIG)
    assert out == {"foo": "abc|n1|n3C|n2"}


def test_a_deferred_goto_target_waits_for_the_pending_node(driver: Any) -> None:
    builder = StateGraph(State)
    builder.add_node("node1", _node("n1")).add_node("late", _node("late"), defer=True)
    builder.add_edge(START, "node1")
    graph = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["node1"])
    driver.invoke(graph, {"foo": "abc"}, CONFIG)
    assert driver.invoke(graph, Command(goto="late"), CONFIG) == {"foo": "abc|n1|late"}
