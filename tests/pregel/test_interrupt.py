"""Pausing runs, on both drivers: interrupt_before/after and ``interrupt()`` with ``Command(resume=...)``."""

import operator
from typing import Annotated, TypedDict

from plait.constants import START
from plait.graph import StateGraph
from plait.types import Command, interrupt


class S(TypedDict):
    x: int
    log: Annotated[list, operator.add]


def _app(saver, **kw):
    g = StateGraph(S)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    return g.compile(checkpointer=saver, **kw)


def test_interrupt_before_pauses(driver, saver, thread) -> None:
    app = _app(saver, interrupt_before=["b"])
    assert driver.invoke(app, {"x": 0}, thread) == {"x": 0, "log": ["a"]}
    assert driver.get_state(app, thread).next == ("b",)


def test_interrupt_before_resume_with_none(driver, saver, thread) -> None:
    app = _app(saver, interrupt_before=["b"])
    driver.invoke(app, {"x": 0}, thread)
    assert driver.invoke(app, None, thread) == {"x": 0, "log": ["a", "b"]}
    assert driver.get_state(app, thread).next == ()


def test_interrupt_after_pauses_and_resumes(driver, saver, thread) -> None:
    app = _app(saver, interrupt_after=["a"])
    assert driver.invoke(app, {"x": 0}, thread)["log"] == ["a"]
    assert driver.get_state(app, thread).next == ("b",)
    assert driver.invoke(app, None, thread)["log"] == ["a", "b"]


def test_interrupt_before_given_at_invoke(driver, saver, thread) -> None:
    app = _app(saver)
    assert driver.invoke(app, {"x": 0}, thread, interrupt_before=["b"])["log"] == ["a"]


def test_update_state_while_paused_then_resume(driver, saver, thread) -> None:
    app = _app(saver, interrupt_before=["b"])
    driver.invoke(app, {"x": 0}, thread)
    driver.update_state(app, thread, {"x": 99})
    assert driver.invoke(app, None, thread) == {"x": 99, "log": ["a", "b"]}


def _approval(saver):
    def ask(state):
        answer = interrupt({"question": "ok?"})
        return {"log": [f"answer:{answer}"]}

    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_node("after", lambda s: {"log": ["after"]})
    g.add_edge(START, "ask")
    g.add_edge("ask", "after")
    return g.compile(checkpointer=saver)


def test_interrupt_returns_payload_to_caller(driver, saver, thread) -> None:
    out = driver.invoke(_approval(saver), {"x": 0}, thread)
    assert [i.value for i in out["__interrupt__"]] == [{"question": "ok?"}]
    assert out["log"] == []


def test_interrupt_visible_in_state(driver, saver, thread) -> None:
    app = _approval(saver)
    driver.invoke(app, {"x": 0}, thread)
    snap = driver.get_state(app, thread)
    assert snap.next == ("ask",)
    assert [i.value for i in snap.interrupts] == [{"question": "ok?"}]
    assert [i.value for i in snap.tasks[0].interrupts] == [{"question": "ok?"}]


def test_resume_with_command(driver, saver, thread) -> None:
    app = _approval(saver)
    driver.invoke(app, {"x": 0}, thread)
    out = driver.invoke(app, Command(resume="yes"), thread)
    assert out == {"x": 0, "log": ["answer:yes", "after"]}
    assert driver.get_state(app, thread).next == ()


def test_node_reruns_from_start_on_resume(driver, saver, thread) -> None:
    calls = []

    def ask(state):
        calls.append("before")
        answer = interrupt("q")
        calls.append(answer)
        return {"x": 1}

    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    app = g.compile(checkpointer=saver)
    driver.invoke(app, {"x": 0}, thread)
    driver.invoke(app, Command(resume="r"), thread)
    assert calls == ["before", "before", "r"]


def test_two_interrupts_in_one_node(driver, saver, thread) -> None:
    def ask(state):
        first = interrupt("first")
        second = interrupt("second")
        return {"log": [first, second]}

    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    app = g.compile(checkpointer=saver)
    assert driver.invoke(app, {"x": 0}, thread)["__interrupt__"][0].value == "first"
    assert driver.invoke(app, Command(resume=1), thread)["__interrupt__"][0].value == "second"
    assert driver.invoke(app, Command(resume=2), thread)["log"] == [1, 2]


def test_stream_updates_reports_interrupt(driver, saver, thread) -> None:
    chunks = driver.stream(_approval(saver), {"x": 0}, thread, stream_mode="updates")
    assert any("__interrupt__" in c for c in chunks)


def test_a_node_pulled_and_sent_in_one_step_asks_and_resumes_as_two_tasks(driver, saver, thread) -> None:
    from plait.types import Send

    class L(TypedDict):
        n: Annotated[list, operator.add]

    def x(state):
        answer = interrupt(f"q{state['n']}")
        return {"n": [f"x{answer}"]}

    g = StateGraph(L)
    g.add_node("a", lambda s: {"n": [1]})
    g.add_node("x", x)
    g.add_edge(START, "a")
    g.add_edge("a", "x")  # x pulled by the edge...
    g.add_conditional_edges("a", lambda s: [Send("x", {"n": [7]})])  # ...and sent, in the same step
    app = g.compile(checkpointer=saver)
    out = driver.invoke(app, {"n": [0]}, thread)
    asked = {i.id: i.value for i in out["__interrupt__"]}
    assert sorted(asked.values()) == ["q[0, 1]", "q[7]"]  # two questions, two ids
    tasks = driver.get_state(app, thread).tasks
    assert len({t.id for t in tasks}) == 2
    assert sorted(t.path for t in tasks) == [("__pregel_pull", "x"), ("__pregel_push", 0, False)]
    out = driver.invoke(app, Command(resume={k: f"-{v}" for k, v in asked.items()}), thread)
    assert sorted(out["n"][2:]) == ["x-q[0, 1]", "x-q[7]"]  # each task got its own answer
