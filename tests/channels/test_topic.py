"""``Topic``: LangGraph's channel API, and as a state field through real graphs."""

import operator
from typing import Annotated, TypedDict

import pytest

from plait.channels.topic import Topic
from plait.constants import START
from plait.errors import EmptyChannelError
from plait.graph import StateGraph


def test_update_appends_items_and_flattens_lists() -> None:
    topic = Topic(str, accumulate=True)
    assert not topic.is_available()
    with pytest.raises(EmptyChannelError):
        topic.get()
    assert topic.update(["a", ["b", "c"]]) is True
    assert topic.update(["d"]) is True
    assert topic.get() == ["a", "b", "c", "d"]
    assert topic.update([]) is False  # accumulating: an empty step keeps the items


def test_without_accumulate_a_step_replaces_and_an_empty_step_clears() -> None:
    topic = Topic(int)
    topic.update([1, 2])
    topic.update([3])
    assert topic.get() == [3]
    assert topic.update([]) is True
    assert not topic.is_available()


def test_checkpoint_round_trip_and_copy_are_independent() -> None:
    topic = Topic(str, accumulate=True)
    topic.update(["x"])
    restored = topic.from_checkpoint(topic.checkpoint())
    restored.update(["y"])
    assert topic.get() == ["x"] and restored.get() == ["x", "y"]
    clone = restored.copy()
    clone.update(["z"])
    assert restored.get() == ["x", "y"]
    assert Topic(str).checkpoint() == []
    assert topic.get() is not topic.get()  # get returns a copy


class Log(TypedDict):
    seen: Annotated[list[str], Topic(str, accumulate=True)]
    last: Annotated[list[str], Topic(str)]
    steps: Annotated[int, operator.add]


def _graph() -> StateGraph:
    g = StateGraph(Log)
    g.add_node("a", lambda s: {"seen": ["a1", "a2"], "last": "a", "steps": 1})
    g.add_node("b", lambda s: {"seen": "b", "steps": 1})
    g.add_node("c", lambda s: {"seen": "c", "last": ["c"], "steps": 1})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("a", "c")
    return g


def test_topic_fields_collect_writes_of_parallel_nodes(driver) -> None:
    out = driver.invoke(_graph().compile(), {"seen": ["in"], "steps": 0})
    assert out["seen"] == ["in", "a1", "a2", "b", "c"]
    assert out["last"] == ["c"]  # only the last step's items
    assert out["steps"] == 3


def test_non_accumulating_topic_is_cleared_by_a_step_that_does_not_write_it(driver) -> None:
    g = _graph()
    g.add_node("d", lambda s: {"steps": 1})
    g.add_edge("b", "d")
    out = driver.invoke(g.compile(), {"seen": []})
    assert "last" not in out
    assert out["seen"] == ["a1", "a2", "b", "c"]


def test_topic_values_are_checkpointed(saver, thread) -> None:
    app = _graph().compile(checkpointer=saver)
    app.invoke({"seen": ["x"]}, thread)
    assert app.get_state(thread).values["seen"] == ["x", "a1", "a2", "b", "c"]
    out = app.invoke({"seen": ["y"]}, thread)
    assert out["seen"] == ["x", "a1", "a2", "b", "c", "y", "a1", "a2", "b", "c"]
