"""Tool-call grouping: units, check_tool_groups, and the shared history strategy."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from plait.memory import check_tool_groups
from plait.memory._groups import tool_call_ids, units

TEXT = st.text(alphabet="abcdefgh ", max_size=40)


@st.composite
def histories(draw: st.DrawFn, max_items: int = 12) -> list[BaseMessage]:
    """Well-formed histories: optional leading system messages, turns, tool-call groups."""
    ids = itertools.count()

    def new_id(prefix: str) -> str:
        return f"{prefix}{next(ids)}"

    messages: list[BaseMessage] = [
        SystemMessage(draw(TEXT), id=new_id("s")) for _ in range(draw(st.integers(0, 2)))
    ]
    kinds = draw(st.lists(st.sampled_from(["human", "ai", "tools", "tools", "system"]), max_size=max_items))
    for kind in kinds:
        if kind == "human":
            messages.append(HumanMessage(draw(TEXT), id=new_id("h")))
        elif kind == "ai":
            messages.append(AIMessage(draw(TEXT), id=new_id("a")))
        elif kind == "system":
            messages.append(SystemMessage(draw(TEXT), id=new_id("m")))
        else:
            calls = [{"name": "tool", "args": {}, "id": new_id("c")} for _ in range(draw(st.integers(1, 3)))]
            messages.append(AIMessage(draw(TEXT), tool_calls=calls, id=new_id("a")))
            for call in draw(st.permutations(calls)):
                messages.append(ToolMessage(draw(TEXT), tool_call_id=call["id"], id=new_id("t")))
    return messages


def call(call_id: str) -> dict:
    return {"name": "lookup", "args": {"q": call_id}, "id": call_id}


def test_tool_call_ids_only_for_ai_messages() -> None:
    assert tool_call_ids(AIMessage("", tool_calls=[call("x"), call("y")])) == ["x", "y"]
    assert tool_call_ids(HumanMessage("x")) == []


def test_units_group_ai_with_all_its_answers() -> None:
    msgs = [
        HumanMessage("q", id="h"),
        AIMessage("", tool_calls=[call("1"), call("2")], id="a"),
        ToolMessage("r2", tool_call_id="2", id="t2"),
        ToolMessage("r1", tool_call_id="1", id="t1"),
        AIMessage("done", id="b"),
    ]
    assert units(msgs) == [(0, 1), (1, 4), (4, 5)]


def test_units_merge_overlapping_groups() -> None:
    msgs = [
        AIMessage("", tool_calls=[call("1")], id="a"),
        AIMessage("", tool_calls=[call("2")], id="b"),
        ToolMessage("r1", tool_call_id="1", id="t1"),
        HumanMessage("between", id="h"),
        ToolMessage("r2", tool_call_id="2", id="t2"),
    ]
    assert units(msgs) == [(0, 5)]


def test_orphan_tool_message_is_its_own_unit_and_reported() -> None:
    msgs = [ToolMessage("r", tool_call_id="zz", id="t"), HumanMessage("h", id="h")]
    assert units(msgs) == [(0, 1), (1, 2)]
    problems = check_tool_groups(msgs)
    assert len(problems) == 1 and "'zz'" in problems[0] and "no earlier AIMessage" in problems[0]


def test_unanswered_call_and_duplicate_answer_reported() -> None:
    msgs = [
        AIMessage("", tool_calls=[call("1"), call("2")], id="a"),
        ToolMessage("r", tool_call_id="1", id="t1"),
        ToolMessage("again", tool_call_id="1", id="t1b"),
    ]
    problems = check_tool_groups(msgs)
    assert problems == [
        "ToolMessage #2 (id='t1b') answers tool call '1' a second time",
        "AIMessage #0 (id='a') requests tool call '2', which has no ToolMessage",
    ]


def test_answer_before_call_is_an_orphan() -> None:
    msgs = [ToolMessage("r", tool_call_id="1", id="t"), AIMessage("", tool_calls=[call("1")], id="a")]
    assert len(check_tool_groups(msgs)) == 2


def test_empty_history() -> None:
    assert units([]) == [] and check_tool_groups([]) == []


@settings(max_examples=200, deadline=None)
@given(histories())
def test_generated_histories_are_well_formed(messages: list[BaseMessage]) -> None:
    assert check_tool_groups(messages) == []
    spans = units(messages)
    assert [i for start, stop in spans for i in range(start, stop)] == list(range(len(messages)))
    for start, stop in spans:  # cutting at any unit boundary keeps every group whole
        assert check_tool_groups(messages[start:]) == []
        assert check_tool_groups(messages[:stop]) == []


@settings(max_examples=200, deadline=None)
@given(histories(), st.data())
def test_cuts_inside_a_group_are_detected(messages: list[BaseMessage], data: st.DataObject) -> None:
    inner = [i for start, stop in units(messages) for i in range(start + 1, stop)]
    if inner:
        cut = data.draw(st.sampled_from(inner))
        assert check_tool_groups(messages[cut:]) != []
        assert check_tool_groups(messages[:cut]) != []
