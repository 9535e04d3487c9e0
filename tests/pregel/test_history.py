"""Threads with InMemorySaver: memory, get_state, history, update_state, time travel."""

import operator
from typing import Annotated, TypedDict

import pytest

from plait.constants import START
from plait.graph import StateGraph


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def _app(saver):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": s["x"] + 1, "log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(checkpointer=saver)


def test_thread_remembers_between_invocations(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    out = app.invoke({"log": ["again"]}, thread)
    assert out == {"x": 2, "log": ["a", "b", "again", "a", "b"]}


def test_threads_are_isolated(saver) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, {"configurable": {"thread_id": "1"}})
    assert app.invoke({"x": 10}, {"configurable": {"thread_id": "2"}})["log"] == ["a", "b"]


def test_missing_thread_id_raises(saver) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        _app(saver).invoke({"x": 0})


def test_get_state_after_run(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    snap = app.get_state(thread)
    assert snap.values == {"x": 1, "log": ["a", "b"]}
    assert snap.next == ()
    assert snap.config["configurable"]["thread_id"] == thread["configurable"]["thread_id"]
    assert snap.config["configurable"]["checkpoint_id"]
    assert snap.metadata["step"] == 2
    assert snap.metadata["source"] == "loop"
    assert snap.created_at
    assert snap.parent_config is not None
    assert snap.tasks == ()


def test_get_state_of_unknown_thread_is_empty(saver, thread) -> None:
    snap = _app(saver).get_state(thread)
    assert snap.values == {} and snap.next == ()


def test_history_newest_first_with_steps(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    history = list(app.get_state_history(thread))
    assert [h.metadata["step"] for h in history] == [2, 1, 0, -1]
    assert [h.metadata["source"] for h in history] == ["loop", "loop", "loop", "input"]
    assert [h.next for h in history] == [(), ("b",), ("a",), ("__start__",)]


def test_history_parent_chain(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    history = list(app.get_state_history(thread))
    for newer, older in zip(history, history[1:]):
        assert newer.parent_config["configurable"]["checkpoint_id"] == older.config["configurable"]["checkpoint_id"]
    assert history[-1].parent_config is None


def test_history_limit(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    assert len(list(app.get_state_history(thread, limit=2))) == 2


def test_second_run_continues_step_numbers(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    app.invoke({"x": 5}, thread)
    # as in LangGraph: the second input checkpoint is step 3, its nodes run at steps 4 and 5... plus 6
    assert [h.metadata["step"] for h in app.get_state_history(thread)] == [6, 5, 4, 3, 2, 1, 0, -1]


def test_update_state_goes_through_reducers(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    app.update_state(thread, {"log": ["manual"], "x": 42})
    snap = app.get_state(thread)
    assert snap.values == {"x": 42, "log": ["a", "b", "manual"]}
    assert snap.metadata["source"] == "update"
    assert snap.metadata["step"] == 3


def test_update_state_as_node_schedules_its_successors(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    app.update_state(thread, {"log": ["fake-a"]}, as_node="a")
    assert app.get_state(thread).next == ("b",)
    out = app.invoke(None, thread)
    assert out["log"] == ["a", "b", "fake-a", "b"]


def test_update_state_unknown_as_node(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    with pytest.raises(Exception, match="zz"):  # noqa: B017
        app.update_state(thread, {"x": 1}, as_node="zz")


def test_time_travel_fork_keeps_old_branch(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    before_b = next(h for h in app.get_state_history(thread) if h.next == ("b",))
    forked = app.update_state(before_b.config, {"log": ["fork"]})
    out = app.invoke(None, forked)
    assert out["log"] == ["a", "fork", "b"]
    # the original branch is still in the history
    ids = [h.config["configurable"]["checkpoint_id"] for h in app.get_state_history(thread)]
    assert before_b.config["configurable"]["checkpoint_id"] in ids
    old = app.get_state(before_b.config)
    assert old.values == {"x": 1, "log": ["a"]}


def test_replay_from_checkpoint_reruns_following_nodes(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    before_b = next(h for h in app.get_state_history(thread) if h.next == ("b",))
    assert app.invoke(None, before_b.config) == {"x": 1, "log": ["a", "b"]}


def test_get_state_by_checkpoint_id(saver, thread) -> None:
    app = _app(saver)
    app.invoke({"x": 0}, thread)
    first = list(app.get_state_history(thread))[-1]
    assert app.get_state(first.config).values == {"log": []}


def test_invoke_none_on_new_thread_fails(saver, thread) -> None:
    with pytest.raises(Exception):  # noqa: B017 - EmptyInputError
        _app(saver).invoke(None, thread)
