"""Strict mode: each silent failure of seed 000 §9 becomes a clear error (or warning)."""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage

from plait.checkpoint.memory import InMemorySaver
from plait.errors import InvalidUpdateError, StrictModeError
from plait.graph import END, START, MessagesState, StateGraph
from plait.graph._strict import StrictModeWarning
from plait.graph.message import REMOVE_ALL_MESSAGES


class Plain(TypedDict):
    a: str


def _one(schema: Any, node: Any, *, strict: bool = True, **compile_kw: Any) -> Any:
    builder = StateGraph(schema).add_node("n", node).add_edge(START, "n").add_edge("n", END)
    return builder.compile(strict=strict, **compile_kw)


def test_undeclared_key_is_an_error_naming_node_key_and_value() -> None:
    with pytest.raises(StrictModeError) as info:
        _one(Plain, lambda s: {"a": "1", "typo": 2}).invoke({"a": "x"})
    err = info.value
    assert (err.node, err.key, err.value) == ("n", "typo", 2)
    assert str(err) == (
        "Node 'n' wrote key 'typo', which no schema declares (value: 2). Declared keys: ['a']. "
        "Add 'typo' to the state schema or fix the typo."
    )


def test_without_strict_mode_an_undeclared_key_is_dropped_like_langgraph_with_a_warning() -> None:
    from plait.errors import UndeclaredKeyWarning

    with pytest.warns(UndeclaredKeyWarning, match="which no schema declares; the value was dropped"):
        assert _one(Plain, lambda s: {"a": "1", "typo": 2}, strict=False).invoke({"a": "x"}) == {"a": "1"}


def test_strict_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_STRICT", "1")
    graph = StateGraph(Plain).add_node("n", lambda s: {"zz": 1}).add_edge(START, "n").compile()
    with pytest.raises(StrictModeError):
        graph.invoke({"a": "x"})


def test_assigning_into_the_received_state_is_an_error() -> None:
    def node(state: Plain) -> dict:
        state["a"] = "changed"  # the seed's 002 Q9 mistake
        return {}

    with pytest.raises(StrictModeError) as info:
        _one(Plain, node).invoke({"a": "x"})
    assert str(info.value) == (
        "Node 'n' assigned state['a'] on the state it received; that changes nothing. "
        "Return the update instead: return {'a': ...}."
    )
    assert info.value.key == "a"


def test_mutating_a_nested_value_in_place_is_an_error() -> None:
    class Issue(TypedDict):
        issue: dict

    def node(state: Issue) -> dict:
        state["issue"]["category"] = "billing"
        return {}

    with pytest.raises(StrictModeError, match=r"Node 'n' modified state\['issue'\] in place"):
        _one(Issue, node).invoke({"issue": {"id": 1}})


def bad_reducer(existing: list, update: list) -> list:
    existing.extend(update)
    return existing


class Bad(TypedDict):
    log: Annotated[list[str], bad_reducer]


def test_reducer_that_mutates_its_first_argument_is_an_error() -> None:
    graph = _one(Bad, lambda s: {"log": ["n"]}, checkpointer=InMemorySaver())
    with pytest.raises(StrictModeError) as info:
        graph.invoke({"log": ["a"]}, {"configurable": {"thread_id": "t"}})
    assert str(info.value).startswith(
        "Reducer 'bad_reducer' of key 'log' modified its first argument in place (merging the graph input)"
    )


def test_non_message_in_an_operator_add_message_list_is_an_error() -> None:
    class Wrong(TypedDict):
        messages: Annotated[list[AnyMessage], operator.add]

    with pytest.raises(StrictModeError) as info:
        _one(Wrong, lambda s: {"messages": [AIMessage("reply")]}).invoke({"messages": ["I am a string"]})
    assert str(info.value) == (
        "The graph input wrote 'I am a string' (str) to message list 'messages', whose reducer 'add' does not "
        "convert it to a message. Use Annotated[list[AnyMessage], add_messages] or write message objects."
    )


class Untyped(TypedDict):
    messages: Annotated[list, operator.add]  # the seeds' pitfall: untyped list, operator.add
    log: Annotated[list, operator.add]


def test_raw_str_beside_messages_in_an_untyped_operator_add_list_is_an_error() -> None:
    graph = _one(Untyped, lambda s: {"messages": ["plain reply"]})
    with pytest.raises(StrictModeError) as info:
        graph.invoke({"messages": [HumanMessage("hi")], "log": []})
    err = info.value
    assert (err.node, err.key, err.value) == ("n", "messages", "plain reply")
    assert str(err) == (
        "After the update of node 'n', list 'messages' holds the raw str 'plain reply' beside message objects; "
        "its reducer 'add' does not convert strings to messages, so `m.content` fails on it later. Use "
        "Annotated[list[AnyMessage], add_messages] (it turns a str into a HumanMessage) or write message "
        "objects, e.g. HumanMessage(...)."
    )
    assert (
        _one(Untyped, lambda s: {"messages": ["plain reply"]}, strict=False).invoke(
            {"messages": [HumanMessage("hi")], "log": []}
        )["messages"][1]
        == "plain reply"
    )  # without strict mode: silently mixed, as LangGraph


def test_raw_str_input_joined_later_by_a_message_is_an_error_naming_the_update() -> None:
    graph = _one(Untyped, lambda s: {"messages": [AIMessage("reply")]})  # seed 000 §6.1, untyped
    with pytest.raises(StrictModeError) as info:
        graph.invoke({"messages": ["I am a string"], "log": []})
    assert (info.value.node, info.value.key, info.value.value) == ("n", "messages", "I am a string")
    with pytest.raises(StrictModeError, match="After the graph input, list 'messages' holds the raw str"):
        _one(Untyped, lambda s: {}).invoke({"messages": [HumanMessage("hi"), "raw"], "log": []})


def test_untyped_lists_of_plain_strings_stay_fine_in_strict_mode() -> None:
    graph = _one(Untyped, lambda s: {"log": ["step"], "messages": [AIMessage("ok")]})
    out = graph.invoke({"messages": [HumanMessage("hi")], "log": ["start"]})
    assert out["log"] == ["start", "step"] and [m.type for m in out["messages"]] == ["human", "ai"]


def test_remove_all_after_new_messages_is_an_error() -> None:
    node = lambda s: {"messages": [AIMessage("summary"), RemoveMessage(id=REMOVE_ALL_MESSAGES)]}  # noqa: E731
    with pytest.raises(
        StrictModeError, match="after new messages in one update to 'messages': it deletes them"
    ):
        _one(MessagesState, node).invoke({"messages": [HumanMessage("hi")]})


def test_remove_all_first_is_fine() -> None:
    node = lambda s: {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), AIMessage("summary")]}  # noqa: E731
    out = _one(MessagesState, node).invoke({"messages": [HumanMessage("hi")]})
    assert [m.content for m in out["messages"]] == ["summary"]


def test_edit_without_id_warns_with_the_id_to_use() -> None:
    def shout(state: MessagesState) -> dict:
        return {"messages": [AIMessage(str(state["messages"][-1].content).upper())]}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _one(MessagesState, shout).invoke({"messages": [AIMessage("hello world again", id="a1")]})
    assert len(out["messages"]) == 2  # behaviour unchanged: appended
    texts = [str(w.message) for w in caught if issubclass(w.category, StrictModeWarning)]
    assert texts == [
        "Node 'n' added a AIMessage without an id to 'messages' that looks like an edit of message "
        "id='a1' ('hello world again'). add_messages appends it as a new message; did you mean to "
        "replace it? Pass id='a1'."
    ]


def test_broken_tool_call_group_is_an_error_but_a_call_in_flight_is_not() -> None:
    call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    in_flight = _one(MessagesState, lambda s: {"messages": [call]}).invoke({"messages": [HumanMessage("q")]})
    assert len(in_flight["messages"]) == 2
    broken = lambda s: {"messages": [call, AIMessage("answer without tool result")]}  # noqa: E731
    with pytest.raises(StrictModeError, match="broken tool-call group: AIMessage #1 requests tool call 'c1'"):
        _one(MessagesState, broken).invoke({"messages": [HumanMessage("q")]})
    orphan = lambda s: {"messages": [ToolMessage("42", tool_call_id="nope")]}  # noqa: E731
    with pytest.raises(
        StrictModeError, match="answers tool call 'nope', which no earlier AIMessage requested"
    ):
        _one(MessagesState, orphan).invoke({"messages": [HumanMessage("q")]})


def test_parallel_writers_without_reducer_fail_at_compile_time() -> None:
    def n1(state: Plain) -> dict:
        return {"a": "1"}

    def n2(state: Plain) -> dict:
        return {"a": "2"}

    builder = StateGraph(Plain).add_node("n1", n1).add_node("n2", n2)
    builder.add_edge(START, "n1").add_edge(START, "n2")
    with pytest.raises(StrictModeError) as info:
        builder.compile(strict=True)
    assert str(info.value) == (
        "Nodes ['n1', 'n2'] run in the same superstep and all write 'a', which has no reducer: the run would fail "
        "with InvalidUpdateError. Give 'a' a reducer (Annotated[T, operator.add], ...) or make the nodes write "
        "different keys."
    )
    with pytest.raises(InvalidUpdateError):  # without strict mode only the run fails
        builder.compile().invoke({"a": "x"})


def test_strict_errors_are_invalid_update_errors() -> None:
    assert issubclass(StrictModeError, InvalidUpdateError)


def test_edit_warning_ignores_new_turns_that_merely_look_alike() -> None:
    def reply(state: MessagesState) -> dict:
        return {"messages": [AIMessage("The weather in London is rainy")]}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _one(MessagesState, reply).invoke(
            {"messages": [AIMessage("The weather in Paris is sunny", id="p"), HumanMessage("and London?")]}
        )
        _one(MessagesState, lambda s: {"messages": [AIMessage("ok")]}).invoke(
            {"messages": [AIMessage("ok", id="o")]}
        )
    assert not [w for w in caught if issubclass(w.category, StrictModeWarning)]
