"""Where subgraphs called inside a node keep their state: checkpoint namespaces, the namespaces
their stream events carry, and how ``get_state``/``update_state`` find them."""

from __future__ import annotations

import functools
import operator
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableLambda
from typing_extensions import TypedDict

from plait.checkpoint.memory import InMemorySaver
from plait.graph import START, StateGraph
from plait.types import Command, Send, interrupt


class Count(TypedDict):
    n: Annotated[int, operator.add]


class Parent(TypedDict):
    total: int


def _counter(checkpointer: Any = None) -> Any:
    return (
        StateGraph(Count)
        .add_node("add", lambda s: {"n": 2})
        .add_edge(START, "add")
        .compile(checkpointer=checkpointer)
    )


def _namespaces(saver: Any, thread_id: str) -> set[str]:
    return {
        c.config["configurable"]["checkpoint_ns"]
        for c in saver.list(None)
        if c.config["configurable"]["thread_id"] == thread_id
    }


def test_each_subgraph_call_in_a_node_gets_its_own_namespace(driver: Any, any_saver: Any) -> None:
    kept, fresh = _counter(checkpointer=True), _counter()
    seen: list[str] = []

    def node(state: Parent, runtime: Any) -> dict[str, Any]:
        seen.append(runtime.execution_info.checkpoint_ns)
        a = kept.invoke({"n": state["total"]})  # first call: the node's name (kept across runs)
        b = fresh.invoke({"n": a["n"]})  # later calls: one more level, numbered by call
        c = fresh.invoke({"n": b["n"]})
        d = kept.invoke({"n": 0})
        return {"total": c["n"] + d["n"]}

    graph = StateGraph(Parent).add_node("node", node).add_edge(START, "node").compile(checkpointer=any_saver)
    config = {"configurable": {"thread_id": "calls"}}
    chunks = driver.stream(graph, {"total": 0}, config, subgraphs=True, stream_mode="updates")
    task_ns = seen[0]
    assert task_ns.startswith("node:")
    assert [ns for ns, _ in chunks] == [("node",), (task_ns, "1"), (task_ns, "2"), ("node", "3"), ()]
    assert chunks[-1] == ((), {"node": {"total": 8}})
    assert _namespaces(any_saver, "calls") == {"", "node", f"{task_ns}|1", f"{task_ns}|2", "node|3"}
    # the persistent subgraph's namespaces are the same in the next run: its state carries on
    assert driver.invoke(graph, {"total": 0}, config) == {"total": 12}  # (2+2)+2+2 and 2+2
    assert len(_namespaces(any_saver, "calls")) == 7  # two more for the fresh calls of the new task


def test_a_persistent_subgraph_under_another_subgraph_keeps_its_state_across_runs(
    driver: Any, any_saver: Any
) -> None:
    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    inner = (
        StateGraph(Log)
        .add_node("x", lambda s: {"log": ["x"]})
        .add_edge(START, "x")
        .compile(checkpointer=True)
    )
    middle = StateGraph(Log).add_node("m", inner).add_edge(START, "m").compile()
    graph = StateGraph(Log).add_node("t", middle).add_edge(START, "t").compile(checkpointer=any_saver)
    config = {"configurable": {"thread_id": "deep"}}
    first = driver.stream(graph, {"log": []}, config, subgraphs=True, stream_mode="updates")
    # the persistent graph's namespace names the graphs above it without their task ids
    assert first[0] == (("t", "m"), {"x": {"log": ["x"]}})
    assert first[1][0][0].startswith("t:")
    assert "t|m" in _namespaces(any_saver, "deep")
    second = driver.stream(graph, {"log": []}, config, subgraphs=True, stream_mode="updates")
    assert second[1][1] == {"m": {"log": ["x", "x", "x"]}}  # the inner graph's earlier log came back


def _asking_subgraph(checkpointer: Any) -> Any:
    class Sub(TypedDict):
        bar: str
        baz: str

    def ask(state: Sub) -> dict[str, Any]:
        return {"baz": interrupt("baz?")}

    def join(state: Sub) -> dict[str, Any]:
        return {"bar": state["bar"] + state["baz"]}

    return (
        StateGraph(Sub)
        .add_node("ask", ask)
        .add_node("join", join)
        .add_edge(START, "ask")
        .add_edge("ask", "join")
        .compile(checkpointer=checkpointer)
    )


class Foo(TypedDict):
    foo: str


@pytest.mark.parametrize("kept", [True, False])
def test_a_node_calling_a_subgraph_shows_its_state_under_the_task(
    driver: Any, any_saver: Any, kept: bool
) -> None:
    subgraph = _asking_subgraph(True if kept else None)

    def node(state: Foo) -> dict[str, Any]:
        return {"foo": subgraph.invoke({"bar": state["foo"]})["bar"]}

    graph = StateGraph(Foo).add_node("node", node).add_edge(START, "node").compile(checkpointer=any_saver)
    assert [name for name, _ in graph.get_subgraphs()] == ["node"]
    config = {"configurable": {"thread_id": f"fn-{kept}"}}
    out = driver.invoke(graph, {"foo": "hi "}, config)
    assert [i.value for i in out["__interrupt__"]] == ["baz?"]
    (task,) = graph.get_state(config, subgraphs=True).tasks
    assert task.state.values == {"bar": "hi "}
    assert task.state.next == ("ask",)
    assert [i.value for i in task.state.interrupts] == ["baz?"]
    # without subgraphs=True, the task's own namespace: it addresses the subgraph's state either way
    (plain,) = graph.get_state(config).tasks
    task_ns = plain.state["configurable"]["checkpoint_ns"]
    assert task_ns == f"node:{plain.id}"
    assert task.state.config["configurable"]["checkpoint_ns"] == ("node" if kept else task_ns)
    assert graph.get_state(plain.state).values == {"bar": "hi "}
    assert len(list(graph.get_state_history(plain.state))) == 2  # its input and its first step
    graph.update_state(plain.state, {"bar": "yo "})
    assert graph.get_state(config, subgraphs=True).tasks[0].state.values == {"bar": "yo "}
    assert driver.invoke(graph, Command(resume="baz"), config) == {"foo": "yo baz"}


def test_subgraphs_found_in_what_a_node_function_reads() -> None:
    sub, off = _counter(), _counter(checkpointer=False)

    class Holder:
        graph = None

        def method(self, state: Parent) -> Any:
            return sub.invoke({"n": 1})

    holder = Holder()
    holder.graph = sub

    def outer() -> Any:
        local = sub

        def closure(state: Parent) -> Any:
            return local.invoke({"n": 1})

        return closure

    def through_attribute(state: Parent) -> Any:
        return holder.graph.invoke({"n": 1})  # type: ignore[attr-defined]

    def never_run(state: Parent) -> Any:
        def later() -> Any:
            return sub.invoke({"n": 1})

        return later

    def as_default(state: Parent, graph: Any = sub) -> Any:
        return graph.invoke({"n": 1})

    def saves_nothing(state: Parent) -> Any:
        return off.invoke({"n": 1})

    nodes: dict[str, Any] = {
        "closure": outer(),
        "attribute": through_attribute,
        "method": holder.method,
        "runnable": RunnableLambda(through_attribute),
        "lambda": lambda state: sub.invoke({"n": 1}),
        "nested_def": never_run,  # only the node's own code counts
        "default": as_default,
        "partial": functools.partial(through_attribute),
        "no_state": saves_nothing,  # checkpointer=False: no state to show
        "node_no_state": off,
    }
    found = {}
    for name, action in nodes.items():
        graph = StateGraph(Parent).add_node(name, action).add_edge(START, name).compile()
        found[name] = [g for _, g in graph.get_subgraphs()]
    assert {name for name, graphs in found.items() if graphs} == {
        "closure",
        "attribute",
        "method",
        "runnable",
        "lambda",
    }
    assert all(graphs == [sub] for graphs in found.values() if graphs)


def test_a_subgraph_with_a_saver_of_its_own_saves_each_call_with_its_parent(
    driver: Any, any_saver: Any
) -> None:
    class Ask(TypedDict):
        prompt: str
        answers: Annotated[list[str], operator.add]

    own = InMemorySaver()
    child = (
        StateGraph(Ask)
        .add_node("ask", lambda s: {"answers": [interrupt(s["prompt"])]})
        .add_edge(START, "ask")
        .compile(checkpointer=own)
    )

    class Fan(TypedDict):
        prompts: list[str]
        answers: Annotated[list[str], operator.add]

    graph = (
        StateGraph(Fan)
        .add_node("child", child)
        .add_conditional_edges(
            START, lambda s: [Send("child", {"prompt": p}) for p in s["prompts"]], ["child"]
        )
        .compile(checkpointer=any_saver)
    )
    config = {"configurable": {"thread_id": "fan"}}
    out = driver.invoke(graph, {"prompts": ["a", "b", "c"]}, config)
    assert sorted(i.value for i in out["__interrupt__"]) == ["a", "b", "c"]
    # one namespace per task, in the parent's saver (as with no saver of its own)
    assert len(_namespaces(any_saver, "fan")) == 4 and list(own.list(None)) == []
    answers = {i.id: f"to {i.value}" for i in graph.get_state(config).interrupts}
    assert sorted(driver.invoke(graph, Command(resume=answers), config)["answers"]) == [
        "to a",
        "to b",
        "to c",
    ]
