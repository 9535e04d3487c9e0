"""LangGraph parity of the runtime: updates as the graph input, several updates of one node,
updates streamed as tasks finish, max_concurrency, push_message, node destinations, tools as nodes."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Literal

import pytest
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.tools import tool
from typing_extensions import TypedDict

from plait.constants import END, START
from plait.errors import InvalidConfigError, InvalidUpdateError, ParentCommand
from plait.graph import MessagesState, StateGraph
from plait.graph.message import add_messages, push_message
from plait.types import Command, Send, StateUpdate


class State(TypedDict):
    foo: str


class Log(TypedDict):
    foo: Annotated[str, operator.add]


@pytest.fixture
def saver(any_saver: Any) -> Any:
    return any_saver


def _agent_tool(saver: Any) -> Any:
    return (
        StateGraph(State)
        .add_node("agent", lambda s: {"foo": "agent"})
        .add_node("tool", lambda s: {"foo": "tool"})
        .add_edge(START, "agent")
        .add_edge("agent", "tool")
        .compile(checkpointer=saver)
    )


def _history(graph: Any, thread: str) -> list[tuple[Any, ...]]:
    config = {"configurable": {"thread_id": thread}}
    return [(s.values, s.next, s.metadata["step"]) for s in graph.get_state_history(config)]


def test_bulk_updates_as_input_rebuild_a_run_history(saver: Any) -> None:
    graph = _agent_tool(saver)
    graph.invoke({"foo": "input"}, {"configurable": {"thread_id": "run"}})
    graph.bulk_update_state(
        {"configurable": {"thread_id": "rebuilt"}},
        [
            [StateUpdate({"foo": "input"}, "__input__")],
            [StateUpdate({"foo": "input"}, "__start__")],
            [StateUpdate({"foo": "agent"}, "agent")],
            [StateUpdate({"foo": "tool"}, "tool")],
        ],
    )
    assert _history(graph, "rebuilt") == _history(graph, "run")
    first = list(graph.get_state_history({"configurable": {"thread_id": "rebuilt"}}))[-1]
    assert first.metadata["source"] == "input"
    assert first.tasks[0].name == START and first.tasks[0].result == {"foo": "input"}


def test_an_input_update_runs_on_invoke_none(saver: Any) -> None:
    graph = _agent_tool(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.update_state(config, {"foo": "given"}, as_node="__input__")
    pending = graph.get_state(config)
    assert pending.metadata["source"] == "input"
    # the input waits for a run, as in LangGraph: START still to run, its writes not in the values yet
    assert pending.next == (START,) and "foo" not in pending.values and pending.tasks[0].name == START
    assert graph.invoke(None, config) == {"foo": "tool"}


def test_bulk_superstep_rules(saver: Any) -> None:
    graph = _agent_tool(saver)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(InvalidUpdateError, match="as_node is required"):
        graph.bulk_update_state(config, [[StateUpdate({"foo": "a"}), StateUpdate({"foo": "b"})]])
    with pytest.raises(InvalidUpdateError, match="only update of its superstep"):
        graph.bulk_update_state(
            config, [[StateUpdate({"foo": "a"}, "agent"), StateUpdate(None, "__input__")]]
        )
    with pytest.raises(InvalidUpdateError, match="no input writes"):
        graph.update_state(config, None, as_node="__input__")


def test_an_update_as_a_scheduled_node_is_that_task_result(saver: Any) -> None:
    graph = _agent_tool(saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"foo": "x"}, config, interrupt_before=["tool"])
    graph.update_state(config, {"foo": "by hand"}, as_node="tool")
    before = list(graph.get_state_history(config))[1]
    assert before.next == ("tool",)
    assert before.tasks[0].result == {"foo": "by hand"}


def test_several_updates_of_one_node_stream_one_by_one() -> None:
    graph = (
        StateGraph(Log)
        .add_node("a", lambda s: [Command(update={"foo": "1"}), Command(update={"foo": "2"})])
        .add_edge(START, "a")
        .compile()
    )
    assert graph.invoke({"foo": ""}) == {"foo": "12"}
    assert list(graph.stream({"foo": ""}, stream_mode="updates")) == [{"a": [{"foo": "1"}, {"foo": "2"}]}]


def test_updates_stream_in_the_order_tasks_finish() -> None:
    async def slow(state: Log) -> Log:
        await asyncio.sleep(0.1)
        return {"foo": "slow"}

    async def fast(state: Log) -> Log:
        return {"foo": "fast"}

    graph = (
        StateGraph(Log)
        .add_node("a_slow", slow)
        .add_node("b_fast", fast)
        .add_edge(START, "a_slow")
        .add_edge(START, "b_fast")
        .compile()
    )

    async def run() -> list[Any]:
        return [c async for c in graph.astream({"foo": ""}, stream_mode="updates")]

    assert asyncio.run(run()) == [{"b_fast": {"foo": "fast"}}, {"a_slow": {"foo": "slow"}}]
    assert graph.invoke({"foo": ""}) == {"foo": "slowfast"}  # the merge order stays the node order


def test_a_failing_task_result_is_streamed_before_the_error() -> None:
    def failing(state: State) -> State:
        raise ValueError("boom")

    graph = StateGraph(State).add_node("failing", failing).add_edge(START, "failing").compile()
    errors: list[Any] = []
    with pytest.raises(ValueError, match="boom"):
        for chunk in graph.stream({"foo": ""}, stream_mode="tasks"):
            if "error" in chunk:
                errors.append(chunk["error"])
    assert [type(e) for e in errors] == [ValueError]


def test_max_concurrency_limits_the_tasks_of_a_step() -> None:
    running, peak = 0, 0

    async def work(n: int) -> dict[str, Any]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return {"foo": [n]}

    class Items(TypedDict):
        foo: Annotated[list[int], operator.add]

    graph = (
        StateGraph(Items)
        .add_node("fan", lambda s: {})
        .add_node("work", work)
        .add_edge(START, "fan")
        .add_conditional_edges("fan", lambda s: [Send("work", i) for i in range(20)])
        .compile()
    )
    out = asyncio.run(graph.ainvoke({"foo": []}, {"max_concurrency": 3}))
    assert out == {"foo": list(range(20))} and peak == 3
    with pytest.raises(InvalidConfigError, match="max_concurrency"):
        graph.invoke({"foo": []}, {"max_concurrency": 0})


def test_interrupt_before_stops_send_tasks(saver: Any) -> None:
    graph = (
        StateGraph(Log)
        .add_node("fan", lambda s: {})
        .add_node("work", lambda s: {"foo": "w"})
        .add_edge(START, "fan")
        .add_conditional_edges("fan", lambda s: [Send("work", {})])
        .compile(checkpointer=saver, interrupt_before=["work"])
    )
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"foo": ""}, config) == {"foo": ""}
    assert graph.invoke(None, config) == {"foo": "w"}


def test_push_message_streams_now_and_writes_the_state() -> None:
    class Chat(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]

    def chat(state: Chat) -> None:
        with pytest.raises(ValueError, match="Message ID is required"):
            push_message(AIMessage(content="no id"))
        push_message(AIMessage(content="hi", id="1"))
        push_message(AIMessage(content="side", id="2"), state_key=None)

    graph = StateGraph(Chat).add_node(chat).add_edge(START, "chat").compile()
    streamed, values = [], None
    for mode, chunk in graph.stream({"messages": []}, stream_mode=["messages", "values"]):
        if mode == "messages":
            streamed.append(chunk[0].id)
        else:
            values = chunk
    assert streamed == ["1", "2"]
    assert values is not None and [m.id for m in values["messages"]] == ["1"]
    with pytest.raises(RuntimeError):
        push_message(AIMessage(content="outside", id="3"))


def test_destinations_are_drawn_as_conditional_edges() -> None:
    def child(state: State) -> Command[Literal["b", "c"]]:
        return Command(goto="c")

    def plain(state: State) -> Literal["b"]:  # a Literal that is no Command: not a destination
        return "b"

    builder = StateGraph(State).add_node("child", child).add_node("b", plain).add_node("c", lambda s: {})
    builder.add_edge(START, "child")
    edges = {(e.source, e.target, e.data, e.conditional) for e in builder.compile().get_graph().edges}
    assert ("child", "b", None, True) in edges and ("child", "c", None, True) in edges
    assert ("b", END, None, False) in edges

    labelled = StateGraph(State).add_node("child", lambda s: {}, destinations={"b": "yes", "c": "no"})
    labelled.add_node("b", lambda s: {}).add_node("c", lambda s: {}).add_edge(START, "child")
    edges = {(e.source, e.target, e.data) for e in labelled.compile().get_graph().edges}
    assert ("child", "b", "yes") in edges and ("child", "c", "no") in edges


def test_command_repr_shows_the_fields_set() -> None:
    assert repr(Command(goto=Send("n", 3))) == "Command(goto=Send(node='n', arg=3))"
    assert repr(Command(update={"a": 1}, resume=0)) == "Command(update={'a': 1})"


def test_a_tool_runs_as_a_node_and_its_parent_command_reaches_the_caller() -> None:
    @tool
    def get_name() -> Command[Any]:
        """The user name."""
        return Command(update={"user_name": "Meow"}, graph=Command.PARENT, goto="next")

    graph = StateGraph(MessagesState).add_node("tool", get_name).add_edge(START, "tool").compile()
    with pytest.raises(ParentCommand) as info:
        graph.invoke({"messages": []})
    assert info.value.args[0].update == {"user_name": "Meow"} and info.value.args[0].goto == "next"
    assert "applied by the parent graph" in str(info.value)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (Command(update={"y": 5}), {"x": 11, "y": 5}),
        (Command(resume="r"), {"x": 11}),
        (Command(goto="m"), {"x": 11, "y": 100}),
        (Command(update={"y": 5}, goto="m"), {"x": 11, "y": 100}),
    ],
    ids=["update", "resume", "goto", "update+goto"],
)
def test_a_command_on_an_input_checkpoint_applies_its_input_first(
    saver: Any, command: Any, expected: dict
) -> None:
    # as in LangGraph (it raised KeyError '__start__' or routed to '__start__')
    class XY(TypedDict, total=False):
        x: int
        y: int

    graph = (
        StateGraph(XY)
        .add_node("n", lambda s: {"x": s["x"] + 1})
        .add_node("m", lambda s: {"y": 100})
        .add_edge(START, "n")
        .compile(checkpointer=saver)
    )
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"x": 0}, config)
    graph.update_state(config, {"x": 10}, as_node="__input__")
    assert graph.invoke(command, config) == expected
    assert graph.get_state(config).next == ()


def test_a_nodes_config_carries_its_runtime_where_langgraph_code_reads_it() -> None:
    """``get_config()["configurable"]["__pregel_runtime"]`` is the node's Runtime (langmem reads the store
    there), and a graph invoked with that config inherits its store."""
    from plait.config import get_config
    from plait.graph import START, StateGraph
    from plait.runtime import Runtime
    from plait.store.memory import InMemoryStore

    class S(TypedDict):
        x: int

    store = InMemoryStore()
    seen: list[object] = []

    def inner(state: S) -> dict[str, int]:
        from plait.config import get_store

        seen.append(get_store())
        return {"x": state["x"] + 1}

    sub = StateGraph(S).add_node("inner", inner).add_edge(START, "inner").compile()  # no store of its own

    def outer(state: S) -> dict[str, int]:
        config = get_config()
        runtime = config["configurable"]["__pregel_runtime"]
        assert isinstance(runtime, Runtime) and runtime.store is store
        return {"x": sub.invoke(state, config)["x"]}

    graph = StateGraph(S).add_node("outer", outer).add_edge(START, "outer").compile(store=store)
    assert graph.invoke({"x": 1}) == {"x": 2}
    assert seen == [store]
