"""Graphs served in the server tests (loaded by ``plait serve`` from plait.json)."""

from __future__ import annotations

import operator
import os
import pathlib
import time
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from plait.config import get_store, get_stream_writer
from plait.graph import END, START, MessagesState, StateGraph
from plait.prebuilt import ToolNode, tools_condition
from plait.types import interrupt


class State(MessagesState):
    turns: Annotated[int, operator.add]


def chat(state: State) -> dict[str, Any]:
    """Echo the last message; ``ask`` interrupts, ``sleep:N`` sleeps, ``gate:PATH`` runs until the test
    opens the gate (:class:`_serve_proc.Gate`), ``fail`` raises, ``remember:X`` stores."""
    text = str(state["messages"][-1].content)
    get_stream_writer()({"progress": text})
    if text == "ask":
        answer = interrupt({"question": "sure?"})
        return {"messages": [AIMessage(f"answer: {answer}")], "turns": 1}
    if text.startswith("sleep:"):
        time.sleep(float(text.split(":")[1]))
    if text.startswith("gate:"):
        _gate(pathlib.Path(text.split(":", 1)[1]))
    if text == "fail":
        raise RuntimeError("the node failed on purpose")
    if text.startswith("remember:"):
        get_store().put(("memories",), "last", {"text": text.split(":", 1)[1]})
    if text == "hidden":  # a runnable LangGraph's server keeps from clients (events stream mode)
        RunnableLambda(lambda x: x).with_config(tags=["langsmith:hidden"], run_name="secret").invoke(text)
    if text.startswith("log:"):
        with open(os.environ["PLAIT_TEST_LOG"], "a") as log:  # one line per node execution
            log.write(text + "\n")
    return {"messages": [AIMessage(f"you said: {text}")], "turns": 1}


def _gate(path: pathlib.Path) -> None:
    """Say the node started (``PATH.started``), then wait until ``PATH`` exists (two minutes at most)."""
    path.with_suffix(".started").touch()
    deadline = time.monotonic() + 120
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


graph = StateGraph(State).add_node("chat", chat).add_edge(START, "chat").add_edge("chat", END).compile()


def first(state: State) -> dict[str, Any]:
    """Step one of two (for kill -9 tests: the second step sleeps)."""
    text = str(state["messages"][-1].content)
    with open(os.environ["PLAIT_TEST_LOG"], "a") as log:
        log.write(f"first {text} {os.getpid()}\n")
    return {"messages": [AIMessage("first done")], "turns": 1}


def second(state: State) -> dict[str, Any]:
    """Step two: sleeps (or waits at the gate ``PLAIT_TEST_GATE``) while the test kills the worker,
    then records who finished."""
    with open(os.environ["PLAIT_TEST_LOG"], "a") as log:
        log.write(f"second-start {os.getpid()}\n")
    if "PLAIT_TEST_GATE" in os.environ:  # waits until the test opens this gate
        _gate(pathlib.Path(os.environ["PLAIT_TEST_GATE"]))
    else:
        time.sleep(float(os.environ.get("PLAIT_TEST_SLEEP", "3")))
    with open(os.environ["PLAIT_TEST_LOG"], "a") as log:
        log.write(f"second-done {os.getpid()}\n")
    return {"messages": [AIMessage("second done")], "turns": 1}


two_steps = (
    StateGraph(State)
    .add_node("first", first)
    .add_node("second", second)
    .add_edge(START, "first")
    .add_edge("first", "second")
    .add_edge("second", END)
    .compile()
)


def inner_step(state: State) -> dict[str, Any]:
    """The subgraph's one step (``nested`` runs it as its node ``inner``)."""
    return {"turns": 1}


inner = StateGraph(State).add_node("inner_step", inner_step).add_edge(START, "inner_step").compile()

nested = (
    StateGraph(State)
    .add_node("chat", chat)
    .add_node("inner", inner)
    .add_edge(START, "chat")
    .add_edge("chat", "inner")
    .add_edge("inner", END)
    .compile()
)


def inner_ask(state: State) -> dict[str, Any]:
    """The subgraph's step that asks (``asks_inside`` runs it as its node ``inner``)."""
    return {"messages": [AIMessage(f"inner got: {interrupt('inner question')}")], "turns": 1}


asks_inside = (
    StateGraph(State)
    .add_node("inner", StateGraph(State).add_node("ask", inner_ask).add_edge(START, "ask").compile())
    .add_edge(START, "inner")
    .add_edge("inner", END)
    .compile()
)


def talk_node(state: State) -> dict[str, Any]:
    """A chat model that streams its answer word by word."""
    model = GenericFakeChatModel(messages=iter([AIMessage("hello there my friend")]))
    return {"messages": [model.invoke(state["messages"])]}


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


talk = (
    StateGraph(State)
    .add_node("talk", talk_node)
    .add_node("tools", ToolNode([lookup]))
    .add_edge(START, "talk")
    .add_conditional_edges("talk", tools_condition)
    .add_edge("tools", "talk")
    .compile()
)
