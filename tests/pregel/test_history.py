"""Threads with InMemorySaver, on both drivers: memory, get_state, history, update_state, time travel."""

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


def test_thread_remembers_between_invocations(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    out = driver.invoke(app, {"log": ["again"]}, thread)
    assert out == {"x": 2, "log": ["a", "b", "again", "a", "b"]}


def test_threads_are_isolated(driver, saver) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, {"configurable": {"thread_id": "1"}})
    assert driver.invoke(app, {"x": 10}, {"configurable": {"thread_id": "2"}})["log"] == ["a", "b"]


def test_missing_thread_id_raises(driver, saver) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        driver.invoke(_app(saver), {"x": 0})


def test_get_state_after_run(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    snap = driver.get_state(app, thread)
    assert snap.values == {"x": 1, "log": ["a", "b"]}
    assert snap.next == ()
    assert snap.config["configurable"]["thread_id"] == thread["configurable"]["thread_id"]
    assert snap.config["configurable"]["checkpoint_id"]
    assert snap.metadata["step"] == 2
    assert snap.metadata["source"] == "loop"
    assert snap.created_at
    assert snap.parent_config is not None
    assert snap.tasks == ()


def test_get_state_of_unknown_thread_is_empty(driver, saver, thread) -> None:
    snap = driver.get_state(_app(saver), thread)
    assert snap.values == {} and snap.next == ()


def test_history_newest_first_with_steps(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    history = driver.get_state_history(app, thread)
    assert [h.metadata["step"] for h in history] == [2, 1, 0, -1]
    assert [h.metadata["source"] for h in history] == ["loop", "loop", "loop", "input"]
    assert [h.next for h in history] == [(), ("b",), ("a",), ("__start__",)]


def test_history_parent_chain(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    history = driver.get_state_history(app, thread)
    for newer, older in zip(history, history[1:], strict=False):
        assert (
            newer.parent_config["configurable"]["checkpoint_id"]
            == older.config["configurable"]["checkpoint_id"]
        )
    assert history[-1].parent_config is None


def test_history_limit(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    assert len(driver.get_state_history(app, thread, limit=2)) == 2


def test_second_run_continues_step_numbers(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    driver.invoke(app, {"x": 5}, thread)
    # as in LangGraph: the second input checkpoint is step 3, its nodes run at steps 4 and 5... plus 6
    assert [h.metadata["step"] for h in driver.get_state_history(app, thread)] == [6, 5, 4, 3, 2, 1, 0, -1]


def test_update_state_goes_through_reducers(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    driver.update_state(app, thread, {"log": ["manual"], "x": 42})
    snap = driver.get_state(app, thread)
    assert snap.values == {"x": 42, "log": ["a", "b", "manual"]}
    assert snap.metadata["source"] == "update"
    assert snap.metadata["step"] == 3


def test_update_state_as_node_schedules_its_successors(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    driver.update_state(app, thread, {"log": ["fake-a"]}, as_node="a")
    assert driver.get_state(app, thread).next == ("b",)
    out = driver.invoke(app, None, thread)
    assert out["log"] == ["a", "b", "fake-a", "b"]


def test_update_state_unknown_as_node(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    with pytest.raises(Exception, match="zz"):  # noqa: B017
        driver.update_state(app, thread, {"x": 1}, as_node="zz")


def test_time_travel_fork_keeps_old_branch(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    before_b = next(h for h in driver.get_state_history(app, thread) if h.next == ("b",))
    forked = driver.update_state(app, before_b.config, {"log": ["fork"]})
    out = driver.invoke(app, None, forked)
    assert out["log"] == ["a", "fork", "b"]
    # the original branch is still in the history
    ids = [h.config["configurable"]["checkpoint_id"] for h in driver.get_state_history(app, thread)]
    assert before_b.config["configurable"]["checkpoint_id"] in ids
    old = driver.get_state(app, before_b.config)
    assert old.values == {"x": 1, "log": ["a"]}


def test_replay_from_checkpoint_reruns_following_nodes(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    before_b = next(h for h in driver.get_state_history(app, thread) if h.next == ("b",))
    assert driver.invoke(app, None, before_b.config) == {"x": 1, "log": ["a", "b"]}


def test_get_state_by_checkpoint_id(driver, saver, thread) -> None:
    app = _app(saver)
    driver.invoke(app, {"x": 0}, thread)
    first = driver.get_state_history(app, thread)[-1]
    assert driver.get_state(app, first.config).values == {"log": []}


def test_invoke_none_on_new_thread_fails(driver, saver, thread) -> None:
    with pytest.raises(Exception):  # noqa: B017 - EmptyInputError
        driver.invoke(_app(saver), None, thread)


def test_history_names_where_each_subgraph_task_keeps_its_state(driver, saver, thread) -> None:
    inner = StateGraph(S).add_node("step", lambda s: {"log": ["step"]}).add_edge(START, "step").compile()
    outer = StateGraph(S).add_node("a", lambda s: {"log": ["a"]}).add_node("inner", inner)
    app = outer.add_edge(START, "a").add_edge("a", "inner").compile(checkpointer=saver)
    driver.invoke(app, {"x": 0}, thread)
    (ran,) = [s for s in driver.get_state_history(app, thread) if s.next == ("inner",)]
    (task,) = ran.tasks
    assert task.state["configurable"]["thread_id"] == thread["configurable"]["thread_id"]
    ns = task.state["configurable"]["checkpoint_ns"]
    assert ns.startswith("inner:")
    inside = driver.get_state(app, task.state)  # the subgraph's state, found by that config
    assert inside.values["log"] == ["a", "step"]
