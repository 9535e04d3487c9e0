"""Pausing runs: interrupt_before/after and ``interrupt()`` with ``Command(resume=...)``."""

import operator
from typing import Annotated, TypedDict

import pytest

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


def test_interrupt_before_pauses(saver, thread) -> None:
    app = _app(saver, interrupt_before=["b"])
    assert app.invoke({"x": 0}, thread) == {"x": 0, "log": ["a"]}
    assert app.get_state(thread).next == ("b",)


def test_interrupt_before_resume_with_none(saver, thread) -> None:
    app = _app(saver, interrupt_before=["b"])
    app.invoke({"x": 0}, thread)
    assert app.invoke(None, thread) == {"x": 0, "log": ["a", "b"]}
    assert app.get_state(thread).next == ()


def test_interrupt_after_pauses_and_resumes(saver, thread) -> None:
    app = _app(saver, interrupt_after=["a"])
    assert app.invoke({"x": 0}, thread)["log"] == ["a"]
    assert app.get_state(thread).next == ("b",)
    assert app.invoke(None, thread)["log"] == ["a", "b"]


def test_interrupt_before_given_at_invoke(saver, thread) -> None:
    app = _app(saver)
    assert app.invoke({"x": 0}, thread, interrupt_before=["b"])["log"] == ["a"]


def test_update_state_while_paused_then_resume(saver, thread) -> None:
    app = _app(saver, interrupt_before=["b"])
    app.invoke({"x": 0}, thread)
    app.update_state(thread, {"x": 99})
    assert app.invoke(None, thread) == {"x": 99, "log": ["a", "b"]}


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


def test_interrupt_returns_payload_to_caller(saver, thread) -> None:
    out = _approval(saver).invoke({"x": 0}, thread)
    assert [i.value for i in out["__interrupt__"]] == [{"question": "ok?"}]
    assert out["log"] == []


def test_interrupt_visible_in_state(saver, thread) -> None:
    app = _approval(saver)
    app.invoke({"x": 0}, thread)
    snap = app.get_state(thread)
    assert snap.next == ("ask",)
    assert [i.value for i in snap.interrupts] == [{"question": "ok?"}]
    assert [i.value for i in snap.tasks[0].interrupts] == [{"question": "ok?"}]


def test_resume_with_command(saver, thread) -> None:
    app = _approval(saver)
    app.invoke({"x": 0}, thread)
    out = app.invoke(Command(resume="yes"), thread)
    assert out == {"x": 0, "log": ["answer:yes", "after"]}
    assert app.get_state(thread).next == ()


def test_node_reruns_from_start_on_resume(saver, thread) -> None:
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
    app.invoke({"x": 0}, thread)
    app.invoke(Command(resume="r"), thread)
    assert calls == ["before", "before", "r"]


def test_two_interrupts_in_one_node(saver, thread) -> None:
    def ask(state):
        first = interrupt("first")
        second = interrupt("second")
        return {"log": [first, second]}

    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    app = g.compile(checkpointer=saver)
    assert app.invoke({"x": 0}, thread)["__interrupt__"][0].value == "first"
    assert app.invoke(Command(resume=1), thread)["__interrupt__"][0].value == "second"
    assert app.invoke(Command(resume=2), thread)["log"] == [1, 2]


def test_stream_updates_reports_interrupt(saver, thread) -> None:
    chunks = list(_approval(saver).stream({"x": 0}, thread, stream_mode="updates"))
    assert any("__interrupt__" in c for c in chunks)
