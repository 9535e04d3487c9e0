"""ToolNode and tools_condition: parallel calls in order, errors, commands, injected arguments."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from plait.checkpoint.memory import InMemorySaver
from plait.graph import END, START, MessagesState, StateGraph
from plait.prebuilt import InjectedState, InjectedStore, ToolNode, ToolRuntime, tools_condition
from plait.prebuilt.tool_node import ToolInvocationError
from plait.store.memory import InMemoryStore
from plait.types import Command


def _call(tool_name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": tool_name, "args": args, "id": call_id, "type": "tool_call"}


def _state(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [HumanMessage("go"), AIMessage("", tool_calls=list(calls))]}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


def _graph(node: ToolNode, **compile_kwargs: Any) -> Any:
    return (
        StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile(**compile_kwargs)
    )


def test_calls_of_one_message_run_in_parallel_and_answer_in_call_order(driver: Any) -> None:
    barrier = threading.Barrier(3, timeout=60)  # deadlocks unless all three calls run at once

    @tool
    def slow(n: int) -> str:
        """Wait for the other calls."""
        barrier.wait()
        time.sleep(0.01 * (3 - n))  # the first call finishes last
        return f"done {n}"

    @tool
    async def aslow(n: int) -> str:
        """Async form."""
        await asyncio.sleep(0.01 * (3 - n))
        return f"done {n}"

    node = ToolNode([slow if driver.kind == "sync" else aslow], name="tools")
    name = "slow" if driver.kind == "sync" else "aslow"
    out = driver.invoke(_graph(node), _state(*(_call(name, f"c{i}", n=i) for i in range(3))))
    answers = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in answers] == [
        ("c0", "done 0"),
        ("c1", "done 1"),
        ("c2", "done 2"),
    ]


def test_unknown_tool_gets_an_error_message_naming_the_available_tools() -> None:
    out = ToolNode([add, fail]).invoke(_state(_call("mul", "1", a=1)))
    [message] = out["messages"]
    assert message.status == "error"
    assert message.content == "Error: mul is not a valid tool, try one of [add, fail]."


def test_bad_arguments_become_an_error_message_by_default_and_tool_errors_raise() -> None:
    [message] = ToolNode([add]).invoke(_state(_call("add", "1", a="x", b=2)))["messages"]
    assert message.status == "error"
    assert "Error invoking tool 'add'" in message.content and "a:" in message.content
    with pytest.raises(ValueError, match="boom"):
        ToolNode([fail]).invoke(_state(_call("fail", "1", reason="boom")))


def _value_error_only(e: ValueError) -> str:
    return f"value: {e}"


@pytest.mark.parametrize(
    ("handle", "expected"),
    [
        (True, "Error: ValueError('boom')\n Please fix your mistakes."),
        ("it broke", "it broke"),
        (_value_error_only, "value: boom"),
        (ValueError, "Error: ValueError('boom')\n Please fix your mistakes."),
        ((KeyError, ValueError), "Error: ValueError('boom')\n Please fix your mistakes."),
    ],
)
def test_handle_tool_errors_variants(handle: Any, expected: str) -> None:
    [message] = ToolNode([fail], handle_tool_errors=handle).invoke(_state(_call("fail", "1", reason="boom")))[
        "messages"
    ]
    assert (message.content, message.status, message.tool_call_id) == (expected, "error", "1")


@pytest.mark.parametrize("handle", [False, KeyError, lambda e: str(e)])
def test_errors_outside_handle_tool_errors_propagate(handle: Any) -> None:
    def key_error_only(e: KeyError) -> str:
        return "handled"

    node = ToolNode(
        [fail], handle_tool_errors=handle if not callable(handle) or handle is KeyError else key_error_only
    )
    with pytest.raises(ValueError, match="boom"):
        node.invoke(_state(_call("fail", "1", reason="boom")))


def test_bad_arguments_raise_tool_invocation_error_without_handling() -> None:
    with pytest.raises(ToolInvocationError):
        ToolNode([add], handle_tool_errors=False).invoke(_state(_call("add", "1", a="x", b=1)))


def test_list_input_gives_list_output_and_tool_calls_input_works() -> None:
    messages = [AIMessage("", tool_calls=[_call("add", "1", a=1, b=2)])]
    assert ToolNode([add]).invoke(messages) == [ToolMessage("3", name="add", tool_call_id="1")]
    assert ToolNode([add]).invoke([_call("add", "2", a=2, b=2)]) == {
        "messages": [ToolMessage("4", name="add", tool_call_id="2")]
    }


def test_a_tool_returning_a_command_updates_state_and_routes(driver: Any) -> None:
    class State(MessagesState):
        user: str

    @tool
    def login(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Log in."""
        return Command(
            update={"user": name, "messages": [ToolMessage(f"hello {name}", tool_call_id=tool_call_id)]},
            goto="after",
        )

    graph = (
        StateGraph(State)
        .add_node("tools", ToolNode([login, add]))
        .add_node("after", lambda s: {"user": s["user"] + "!"})
        .add_edge(START, "tools")
        .add_edge("after", END)
        .compile()
    )
    out = driver.invoke(graph, _state(_call("login", "1", name="ana"), _call("add", "2", a=1, b=1)))
    assert out["user"] == "ana!"
    assert [(m.tool_call_id, m.content, m.name) for m in out["messages"][2:]] == [
        ("1", "hello ana", "login"),
        ("2", "2", "add"),
    ]


def test_command_without_matching_tool_message_is_rejected() -> None:
    @tool
    def bad() -> Command[Any]:
        """Forgets the ToolMessage."""
        return Command(update={"messages": []})

    with pytest.raises(ValueError, match="Expected to have a matching ToolMessage"):
        ToolNode([bad], handle_tool_errors=False).invoke(_state(_call("bad", "1")))


def test_injected_arguments_are_hidden_from_the_model_and_filled_in(driver: Any) -> None:
    class State(MessagesState):
        city: str

    seen: dict[str, Any] = {}

    @tool
    def lookup(
        query: str,
        city: Annotated[str, InjectedState("city")],
        state: Annotated[dict[str, Any], InjectedState],
        store: Annotated[Any, InjectedStore()],
        call_id: Annotated[str, InjectedToolCallId],
        runtime: ToolRuntime,
    ) -> str:
        """Look something up."""
        seen.update(city=city, n=len(state["messages"]), call_id=call_id, runtime_id=runtime.tool_call_id)
        store.put(("notes",), query, {"city": city})
        return f"{query} in {city}"

    schema = convert_to_openai_tool(lookup)["function"]["parameters"]
    assert list(schema["properties"]) == ["query"]
    store = InMemoryStore()
    graph = (
        StateGraph(State).add_node("tools", ToolNode([lookup])).add_edge(START, "tools").compile(store=store)
    )
    # the model tries to forge an injected value: it is replaced
    out = driver.invoke(graph, {**_state(_call("lookup", "7", query="rain", city="Nowhere")), "city": "Oslo"})
    assert out["messages"][-1].content == "rain in Oslo"
    assert seen == {"city": "Oslo", "n": 2, "call_id": "7", "runtime_id": "7"}
    assert store.get(("notes",), "rain").value == {"city": "Oslo"}


def test_injected_store_without_a_store_fails_clearly() -> None:
    @tool
    def remember(text: str, store: Annotated[Any, InjectedStore()]) -> str:
        """Remember."""
        return text

    with pytest.raises(ValueError, match="compile your graph with a store"):
        _graph(ToolNode([remember])).invoke(_state(_call("remember", "1", text="x")))


def test_interrupt_inside_a_tool_pauses_and_resumes() -> None:
    from plait.types import interrupt

    @tool
    def ask(question: str) -> str:
        """Ask a human."""
        return f"human said {interrupt(question)}"

    graph = _graph(ToolNode([ask]), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke(_state(_call("ask", "1", question="ok?")), config)
    assert first["__interrupt__"][0].value == "ok?"
    out = graph.invoke(Command(resume="yes"), config)
    assert out["messages"][-1].content == "human said yes"


def test_tools_condition_routes_on_tool_calls() -> None:
    assert tools_condition(_state(_call("add", "1", a=1, b=1))) == "tools"
    assert tools_condition({"messages": [AIMessage("done")]}) == "__end__"
    assert tools_condition([AIMessage("", tool_calls=[_call("add", "1")])]) == "tools"
    with pytest.raises(ValueError, match="No messages found"):
        tools_condition({"messages": []})


def test_wrap_tool_call_can_retry_and_short_circuit() -> None:
    attempts: list[str] = []

    def wrap(request: Any, execute: Any) -> Any:
        if request.tool is None:
            return ToolMessage("cached", tool_call_id=request.tool_call["id"])
        attempts.append(request.tool_call["id"])
        return execute(request.override(tool_call={**request.tool_call, "args": {"a": 10, "b": 1}}))

    out = ToolNode([add], wrap_tool_call=wrap).invoke(_state(_call("add", "1", a=1, b=1), _call("nope", "2")))
    assert [m.content for m in out["messages"]] == ["11", "cached"]
    assert attempts == ["1"]


def test_error_templates_and_block_types_import_from_tool_node() -> None:
    from langchain_core.tools.base import TOOL_MESSAGE_BLOCK_TYPES as CORE_TYPES

    from plait.prebuilt.tool_node import (
        TOOL_EXECUTION_ERROR_TEMPLATE,
        TOOL_INVOCATION_ERROR_TEMPLATE,
        TOOL_MESSAGE_BLOCK_TYPES,
    )

    fields = {"tool_name": "add", "tool_kwargs": {"a": 1}, "error": "boom"}
    assert TOOL_EXECUTION_ERROR_TEMPLATE.format(**fields).startswith(
        "Error executing tool 'add' with kwargs {'a': 1}"
    )
    assert TOOL_INVOCATION_ERROR_TEMPLATE.format(**fields).startswith(
        "Error invoking tool 'add' with kwargs {'a': 1}"
    )
    assert TOOL_MESSAGE_BLOCK_TYPES is CORE_TYPES
