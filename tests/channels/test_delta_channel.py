"""``DeltaChannel``: a reducer over a whole step's writes, standalone and as a state field."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
from typing_extensions import TypedDict

from plait.channels import DeltaChannel
from plait.checkpoint.sqlite import SqliteSaver
from plait.constants import START
from plait.errors import EmptyChannelError, InvalidUpdateError
from plait.graph import StateGraph
from plait.types import Overwrite


def _extend(state: list[str], writes: list[list[str]]) -> list[str]:
    return [*state, *(v for write in writes for v in write)]


def test_a_step_is_folded_in_one_reducer_call() -> None:
    batches: list[list[Any]] = []

    def record(state: list[str], writes: list[list[str]]) -> list[str]:
        batches.append(list(writes))
        return _extend(state, writes)

    channel = DeltaChannel(record)
    with pytest.raises(EmptyChannelError):
        channel.get()
    assert channel.update([["a"], ["b", "c"]]) is True
    assert channel.update([]) is False
    assert channel.get() == ["a", "b", "c"]
    assert batches == [[["a"], ["b", "c"]]]


def test_overwrite_replaces_the_value_and_twice_in_a_step_is_an_error() -> None:
    channel = DeltaChannel(_extend)
    channel.update([["a"]])
    channel.update([Overwrite(["z"]), ["ignored"]])
    assert channel.get() == ["z"]
    channel.update([Overwrite(None)])
    assert channel.get() == []
    with pytest.raises(InvalidUpdateError, match="only one Overwrite"):
        channel.update([Overwrite([]), Overwrite([])])


def test_snapshot_frequency_must_be_positive() -> None:
    assert DeltaChannel(_extend, snapshot_frequency=1).snapshot_frequency == 1
    for bad in (0, -1):
        with pytest.raises(ValueError, match="snapshot_frequency"):
            DeltaChannel(_extend, snapshot_frequency=bad)


def test_channels_with_the_same_reducer_and_frequency_are_equal() -> None:
    assert DeltaChannel(_extend) == DeltaChannel(_extend)
    assert DeltaChannel(_extend) != DeltaChannel(_extend, snapshot_frequency=5)


class State(TypedDict):
    items: Annotated[list[str], DeltaChannel(_extend)]
    n: int


def test_as_a_state_field_parallel_writes_fold_in_node_order(tmp_path: Path) -> None:
    graph = (
        StateGraph(State)
        .add_node("b", lambda s: {"items": ["b"]})
        .add_node("a", lambda s: {"items": ["a1", "a2"]})
        .add_node("count", lambda s: {"n": len(s["items"])})
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(["a", "b"], "count")
    )
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.db")) as saver:
        app = graph.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}}
        assert app.invoke({"items": ["in"], "n": 0}, config) == {"items": ["in", "a1", "a2", "b"], "n": 4}
        assert app.invoke({"n": 0}, config)["items"] == ["in", "a1", "a2", "b", "a1", "a2", "b"]
        assert app.get_state(config).values["items"][-1] == "b"


def test_an_unwritten_field_reads_as_the_empty_value() -> None:
    app = (
        StateGraph(State)
        .add_node("count", lambda s: {"n": len(s["items"])})
        .add_edge(START, "count")
        .compile()
    )
    assert app.invoke({"n": 9}) == {"items": [], "n": 0}


def test_the_messages_delta_reducer_dedupes_removes_and_resets() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage

    from plait.graph.message import REMOVE_ALL_MESSAGES, _messages_delta_reducer

    def shown(messages: list[Any]) -> list[tuple[Any, Any]]:
        return [(m.id, m.content) for m in messages]

    state = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    out = _messages_delta_reducer(state, [[HumanMessage("a2", id="1")], [RemoveMessage(id="2")], "plain"])
    assert shown(out) == [("1", "a2"), (None, "plain")]
    assert shown(state) == [("1", "a"), ("2", "b")]  # the old value is not changed
    assert shown(
        _messages_delta_reducer(state, [[RemoveMessage(id="1")], [HumanMessage("back", id="1")]])
    ) == [
        ("2", "b"),
        ("1", "back"),
    ]
    reset = [[HumanMessage("x", id="3"), RemoveMessage(id=REMOVE_ALL_MESSAGES), AIMessage("y", id="4")]]
    assert shown(_messages_delta_reducer(state, reset)) == [("4", "y")]
    assert shown(_messages_delta_reducer(state, [[RemoveMessage(id="unknown")]])) == shown(state)
    # batching-invariant: one call over all writes equals one call per write
    writes: list[Any] = [[AIMessage("c", id="5")], [RemoveMessage(id="1")], [HumanMessage("d", id="2")]]
    one = _messages_delta_reducer(state, writes)
    step = state
    for write in writes:
        step = _messages_delta_reducer(step, [write])
    assert shown(one) == shown(step)
