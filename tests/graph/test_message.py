"""Tests for ``plait.graph.message``: the ``add_messages`` reducer and ``MessagesState``."""

from __future__ import annotations

import inspect
import itertools
import typing
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from plait.graph import message as message_module
from plait.graph.message import REMOVE_ALL_MESSAGES, MessagesState, add_messages


def _snapshot(messages: list[Any]) -> list[Any]:
    """A deep, comparable picture of a list of messages (or message-likes)."""
    return [m.model_dump() if isinstance(m, BaseMessage) else m for m in messages]


def _is_uuid(value: str | None) -> bool:
    try:
        return str(uuid.UUID(str(value))) == value
    except ValueError:
        return False


# ---------------------------------------------------------------- basics


def test_signature_has_exactly_two_positional_parameters() -> None:
    params = inspect.signature(add_messages).parameters.values()
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert positional == ["left", "right"]


def test_append_new_ids_in_order() -> None:
    left = [HumanMessage("hi", id="1")]
    right = [AIMessage("a", id="2"), AIMessage("b", id="3")]
    result = add_messages(left, right)
    assert [m.id for m in result] == ["1", "2", "3"]
    assert result[1] is right[0]


def test_replace_in_place_keeps_position_and_swaps_class() -> None:
    left = [HumanMessage("a", id="1"), HumanMessage("b", id="2"), HumanMessage("c", id="3")]
    result = add_messages(left, [AIMessage("B", id="2")])
    assert [m.id for m in result] == ["1", "2", "3"]
    assert isinstance(result[1], AIMessage)
    assert result[1].content == "B"


def test_single_message_is_wrapped() -> None:
    result = add_messages([HumanMessage("a", id="1")], AIMessage("b", id="2"))
    assert [m.id for m in result] == ["1", "2"]


def test_missing_ids_get_uuids_on_both_sides() -> None:
    result = add_messages([HumanMessage("a")], [AIMessage("b")])
    assert len(result) == 2
    assert all(_is_uuid(m.id) for m in result)
    assert result[0].id != result[1].id


def test_empty_string_id_is_kept() -> None:
    assert add_messages([], [HumanMessage("x", id="")])[0].id == ""


def test_returns_new_list() -> None:
    left = [HumanMessage("a", id="1")]
    assert add_messages(left, []) is not left
    assert add_messages(left, [AIMessage("b", id="1")]) is not left


# ---------------------------------------------------------------- coercion

COERCION_TABLE = [
    ("plain string", HumanMessage),
    (("user", "x"), HumanMessage),
    (("human", "x"), HumanMessage),
    (("assistant", "x"), AIMessage),
    (("ai", "x"), AIMessage),
    (("system", "x"), SystemMessage),
    ({"role": "user", "content": "x"}, HumanMessage),
    ({"role": "assistant", "content": "x"}, AIMessage),
    ({"role": "system", "content": "x"}, SystemMessage),
    ({"role": "tool", "content": "x", "tool_call_id": "t1"}, ToolMessage),
    ({"type": "human", "content": "x"}, HumanMessage),
    ({"type": "ai", "content": "x"}, AIMessage),
]


@pytest.mark.parametrize(("value", "kind"), COERCION_TABLE)
@pytest.mark.parametrize("wrap", [False, True])
def test_coercion_table(value: Any, kind: type, wrap: bool) -> None:
    result = add_messages([], [value] if wrap else value)
    assert len(result) == 1
    assert type(result[0]) is kind
    assert _is_uuid(result[0].id)


def test_left_side_is_coerced_too() -> None:
    result = add_messages("hello", [("assistant", "hi")])
    assert [type(m) for m in result] == [HumanMessage, AIMessage]


def test_dict_with_explicit_id_keeps_it() -> None:
    result = add_messages([HumanMessage("a", id="1")], [{"role": "ai", "content": "z", "id": "1"}])
    assert len(result) == 1 and isinstance(result[0], AIMessage) and result[0].content == "z"


def test_chunks_become_messages() -> None:
    result = add_messages([], [AIMessageChunk(content="part", id="c1")])
    assert type(result[0]) is AIMessage
    assert result[0].content == "part" and result[0].id == "c1"


@pytest.mark.parametrize("bad", [("bogus", "x"), {"role": "bogus", "content": "x"}])
def test_unknown_role_raises(bad: Any) -> None:
    with pytest.raises(ValueError, match="Unexpected message type: 'bogus'"):
        add_messages([], [bad])


# ---------------------------------------------------------------- removal


def test_remove_by_id() -> None:
    left = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    result = add_messages(left, [RemoveMessage(id="1")])
    assert [m.id for m in result] == ["2"]


def test_remove_unknown_id_error_text() -> None:
    with pytest.raises(ValueError) as info:
        add_messages([HumanMessage("a", id="1")], [RemoveMessage(id="x")])
    assert str(info.value) == "Attempting to delete a message with an ID that doesn't exist ('x')"


def test_remove_then_readd_in_same_update_keeps_position() -> None:
    left = [HumanMessage("a", id="1"), HumanMessage("b", id="2")]
    result = add_messages(left, [RemoveMessage(id="1"), AIMessage("again", id="1")])
    assert [(m.id, m.content) for m in result] == [("1", "again"), ("2", "b")]


def test_remove_then_readd_in_later_update_appends() -> None:
    state = add_messages([HumanMessage("a", id="1"), HumanMessage("b", id="2")], [RemoveMessage(id="1")])
    state = add_messages(state, [AIMessage("again", id="1")])
    assert [m.id for m in state] == ["2", "1"]


def test_add_then_remove_in_same_update() -> None:
    result = add_messages([HumanMessage("a", id="1")], [AIMessage("n", id="9"), RemoveMessage(id="9")])
    assert [m.id for m in result] == ["1"]


def test_duplicate_ids_in_left_replace_last_and_remove_all_copies() -> None:
    left = [HumanMessage("a", id="1"), HumanMessage("b", id="1")]
    replaced = add_messages(left, [AIMessage("c", id="1")])
    assert [m.content for m in replaced] == ["a", "c"]
    assert add_messages(left, [RemoveMessage(id="1")]) == []


# ---------------------------------------------------------------- REMOVE_ALL


def test_remove_all_constant() -> None:
    assert REMOVE_ALL_MESSAGES == "__remove_all__"


def test_remove_all_drops_left_and_keeps_what_follows() -> None:
    left = [HumanMessage("a", id="1")]
    right = [AIMessage("x", id="5"), RemoveMessage(id=REMOVE_ALL_MESSAGES), AIMessage("y", id="6")]
    assert [m.id for m in add_messages(left, right)] == ["6"]


def test_remove_all_alone_empties() -> None:
    assert add_messages([HumanMessage("a", id="1")], [RemoveMessage(id=REMOVE_ALL_MESSAGES)]) == []


def test_last_remove_all_marker_wins() -> None:
    right = [
        AIMessage("x", id="5"),
        RemoveMessage(id=REMOVE_ALL_MESSAGES),
        AIMessage("y", id="6"),
        RemoveMessage(id=REMOVE_ALL_MESSAGES),
        AIMessage("z", id="7"),
        HumanMessage("w"),
    ]
    result = add_messages([HumanMessage("a", id="1")], right)
    assert [m.content for m in result] == ["z", "w"]
    assert _is_uuid(result[1].id)


def test_tail_after_remove_all_is_returned_verbatim() -> None:
    # Like LangGraph: the tail is not merged, so duplicates and removals stay.
    tail = [AIMessage("a", id="7"), AIMessage("b", id="7"), RemoveMessage(id="nope")]
    result = add_messages([HumanMessage("x", id="1")], [RemoveMessage(id=REMOVE_ALL_MESSAGES), *tail])
    assert result == tail


# ---------------------------------------------------------------- only ids are written


def _without_new_ids(after: list[Any], before: list[Any]) -> list[Any]:
    """``after``'s snapshot, with ids blanked where ``before`` had none (ids added in place)."""
    return [
        {**a, "id": None}
        if isinstance(a, dict) and isinstance(b, dict) and "id" in b and b["id"] is None
        else a
        for a, b in zip(after, before, strict=True)
    ]


def test_id_less_messages_get_ids_in_place() -> None:
    # Like LangGraph: the caller's id-less messages receive their new id in place, so they
    # compare equal to (and are) the messages of the result; nothing else of them changes.
    shared = HumanMessage("keep")
    left = [HumanMessage("a"), shared, AIMessage("b", id="2")]
    right = [AIMessage("c"), AIMessage("B", id="2"), {"role": "user", "content": "d"}]
    before_left, before_right = _snapshot(left), _snapshot(right)
    result = add_messages(left, right)
    assert _without_new_ids(_snapshot(left), before_left) == before_left
    assert _without_new_ids(_snapshot(right), before_right) == before_right
    assert shared.id is not None and _is_uuid(shared.id)
    assert result[1] is shared and result[3] is right[0]
    assert all(m.id is not None for m in result)


def test_failed_merge_leaves_lists_alone() -> None:
    left = [HumanMessage("a", id="1"), HumanMessage("b")]
    right = [AIMessage("c"), RemoveMessage(id="missing")]
    before_left, before_right = _snapshot(left), _snapshot(right)
    with pytest.raises(ValueError):
        add_messages(left, right)
    assert _without_new_ids(_snapshot(left), before_left) == before_left
    assert _without_new_ids(_snapshot(right), before_right) == before_right


# ---------------------------------------------------------------- arguments and format


def test_bound_reducer_when_called_without_lists() -> None:
    reducer = add_messages(format="langchain-openai")
    assert callable(reducer)
    result = reducer([], [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert isinstance(result[0], HumanMessage)


def test_openai_format_rebuilds_messages_like_langgraph() -> None:
    # LangGraph's formatter rebuilds every message and drops the ids; plait does the same.
    result = add_messages([HumanMessage("a", id="1")], [AIMessage("b", id="2")], format="langchain-openai")
    assert [(type(m), m.content, m.id) for m in result] == [(HumanMessage, "a", None), (AIMessage, "b", None)]


def test_unknown_format_raises() -> None:
    with pytest.raises(ValueError, match="Unrecognized format='xml'"):
        add_messages([], [], format="xml")  # type: ignore[arg-type]


@pytest.mark.parametrize(("left", "right", "given"), [([], None, "left"), (None, [], "right")])
def test_only_one_side_given(left: Any, right: Any, given: str) -> None:
    with pytest.raises(ValueError, match=f"Only received: '{given}'"):
        add_messages(left, right)


# ---------------------------------------------------------------- MessagesState


def test_messages_state_annotations() -> None:
    assert repr(MessagesState.__annotations__) == (
        "{'messages': ForwardRef('Annotated[list[AnyMessage], add_messages]', module='plait.graph.message')}"
    )


def test_messages_state_type_hints_resolve() -> None:
    hints = typing.get_type_hints(MessagesState, include_extras=True)
    assert typing.get_origin(hints["messages"]) is typing.Annotated
    list_type, reducer = typing.get_args(hints["messages"])
    assert reducer is add_messages
    assert typing.get_origin(list_type) is list
    assert message_module.AnyMessage is typing.get_args(list_type)[0]


# ---------------------------------------------------------------- properties

POOL = ["a", "b", "c", "d", "e"]


_TAGS = itertools.count()


@st.composite
def _messages(draw: st.DrawFn) -> BaseMessage:
    """A message with a unique content tag and an id from POOL (or none)."""
    kind = draw(st.sampled_from([HumanMessage, AIMessage]))
    return kind(f"m{next(_TAGS)}", id=draw(st.sampled_from([*POOL, None])))


@st.composite
def _updates(draw: st.DrawFn) -> list[BaseMessage]:
    """One update: adds and removals, optionally a REMOVE_ALL with a clean tail."""
    item = st.one_of(_messages(), st.sampled_from(POOL).map(lambda i: RemoveMessage(id=i)))
    update = draw(st.lists(item, max_size=6))
    if draw(st.booleans()) and draw(st.booleans()):
        tail: list[BaseMessage] = []
        for m in draw(st.lists(_messages(), max_size=4)):
            if m.id is None or m.id not in {t.id for t in tail}:
                tail.append(m)
        for spot in draw(st.lists(st.integers(0, len(update)), max_size=2)):
            update.insert(spot, RemoveMessage(id=REMOVE_ALL_MESSAGES))
        update = [*update, RemoveMessage(id=REMOVE_ALL_MESSAGES), *tail]
    return update


def _reference(left: list[BaseMessage], right: list[BaseMessage]) -> list[BaseMessage]:
    """Slow model: each id's latest message, alive flag and first-seen position."""
    markers = [i for i, m in enumerate(right) if isinstance(m, RemoveMessage) and m.id == REMOVE_ALL_MESSAGES]
    if markers:
        return list(right[markers[-1] + 1 :])
    order: list[str] = []
    latest: dict[str, BaseMessage] = {}
    alive: dict[str, bool] = {}
    for m in [*left, *right]:
        key = m.id if m.id is not None else f"gen-{m.content}"
        if isinstance(m, RemoveMessage):
            if key not in latest:
                raise ValueError(key)
            alive[key] = False
            continue
        if key not in latest:
            order.append(key)
        latest[key], alive[key] = m, True
    return [latest[k] for k in order if alive[k]]


def _view(messages: list[BaseMessage]) -> list[tuple[str, Any, str | None]]:
    """Messages as (class, content, id), with generated ids blanked out."""
    return [(type(m).__name__, m.content, None if m.id not in POOL else m.id) for m in messages]


@settings(max_examples=300, deadline=None)
@given(st.lists(_updates(), max_size=6))
def test_matches_reference_model(updates: list[list[BaseMessage]]) -> None:
    state: list[BaseMessage] = []
    model: list[BaseMessage] = []
    for update in updates:
        before = _snapshot(update)
        try:
            expected = _reference(model, update)
        except ValueError:
            with pytest.raises(ValueError, match="doesn't exist"):
                add_messages(state, update)
            continue
        state = add_messages(state, update)
        model = expected
        assert _view(state) == _view(model)
        assert _without_new_ids(_snapshot(update), before) == before
        ids = [m.id for m in state]
        assert len(ids) == len(set(ids)) and None not in ids


def _unique_messages(prefix: str) -> st.SearchStrategy[list[BaseMessage]]:
    ids = st.lists(st.integers(0, 30), unique=True, max_size=10)
    return ids.map(lambda ns: [HumanMessage(f"{prefix}{n}", id=f"{prefix}{n}") for n in ns])


@settings(max_examples=200, deadline=None)
@given(_unique_messages("L"), st.data())
def test_left_order_and_appended_order_preserved(left: list[BaseMessage], data: st.DataObject) -> None:
    left_ids = [m.id for m in left]
    replacements = data.draw(st.lists(st.sampled_from(left_ids), unique=True) if left_ids else st.just([]))
    removals = data.draw(st.lists(st.sampled_from(left_ids), unique=True) if left_ids else st.just([]))
    new = data.draw(_unique_messages("R"))
    right: list[BaseMessage] = [AIMessage("r", id=i) for i in replacements]
    right += [RemoveMessage(id=i) for i in removals] + new
    right = data.draw(st.permutations(right))
    result = add_messages(left, right)
    ids = [m.id for m in result]
    assert len(ids) == len(set(ids))
    last_op = {m.id: isinstance(m, RemoveMessage) for m in right}
    survivors = [i for i in left_ids if not last_op.get(i, False)]
    assert ids[: len(survivors)] == survivors
    assert ids[len(survivors) :] == [m.id for m in right if m.id and m.id.startswith("R")]
    for m in result:
        assert m.content == ("r" if m.id in replacements else m.id)


@settings(max_examples=100, deadline=None)
@given(_unique_messages("L").filter(bool), st.data())
def test_remove_then_readd(left: list[BaseMessage], data: st.DataObject) -> None:
    target = data.draw(st.sampled_from([m.id for m in left]))
    same_update = add_messages(left, [RemoveMessage(id=target), AIMessage("back", id=target)])
    assert [m.id for m in same_update] == [m.id for m in left]
    later = add_messages(add_messages(left, [RemoveMessage(id=target)]), [AIMessage("back", id=target)])
    assert [m.id for m in later] == [m.id for m in left if m.id != target] + [target]
    assert later[-1].content == "back"


# ---------------------------------------------------------------- the id index carried by MessageList


def test_append_extends_the_index_and_hands_it_on() -> None:
    first = add_messages([], [HumanMessage("a", id="1")])
    second = add_messages(first, [AIMessage("b", id="2")])
    assert isinstance(second, message_module.MessageList)
    assert second.id_index == {"1": 0, "2": 1} and first.id_index is None
    third = add_messages(second, [AIMessage("B", id="2")])
    assert [m.content for m in third] == ["a", "B"] and third.id_index == {"1": 0, "2": 1}


def test_list_changed_behind_its_back_is_reindexed() -> None:
    merged = add_messages([HumanMessage("a", id="1")], [AIMessage("b", id="2")])
    merged[0] = HumanMessage("x", id="9")  # in place: the index must not be trusted
    out = add_messages(merged, [HumanMessage("X", id="9"), HumanMessage("c", id="1")])
    assert [(m.id, m.content) for m in out] == [("9", "X"), ("2", "b"), ("1", "c")]
    again = add_messages([HumanMessage("a", id="1")], [AIMessage("b", id="2")])
    list.append(again, HumanMessage("hidden", id="3"))  # bypasses the tracking: caught by the length check
    out = add_messages(again, [HumanMessage("H", id="3")])
    assert [m.content for m in out] == ["a", "b", "H"]


def test_removal_and_stale_shared_index() -> None:
    base = add_messages([], [HumanMessage("a", id="1"), HumanMessage("b", id="2")])
    index = base.id_index
    grown = add_messages(base, [HumanMessage("c", id="3")])
    assert grown.id_index is index and base.id_index is None
    fork = add_messages(base, [HumanMessage("d", id="4")])  # base rebuilt its own index
    assert [m.id for m in fork] == ["1", "2", "4"]
    trimmed = add_messages(grown, [RemoveMessage(id="1")])
    assert [m.id for m in trimmed] == ["2", "3"] and trimmed.id_index is None
    assert [m.id for m in add_messages(trimmed, [HumanMessage("e", id="5")])] == ["2", "3", "5"]


def test_merged_list_keeps_the_list_methods() -> None:
    merged = add_messages([HumanMessage("a", id="1")], [AIMessage("b", id="2")])
    assert merged.index(merged[1]) == 1  # the id index is an attribute of its own, not list.index
    assert merged.count(merged[0]) == 1
