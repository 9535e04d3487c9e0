"""Run by LangGraph's own interpreter (/tmp/lgref): writes or reads threads with LangGraph 1.2.24 itself.

Usage: ``python _langgraph_writer.py setup|write|check sqlite|postgres PATH_OR_DSN``. Prints one JSON line:
``{thread_id: {"messages": [[type, content, id], ...], "turns": n, "next": [...], "interrupts": [...]}}``.
Never imports plait.
"""

from __future__ import annotations

import datetime
import decimal
import json
import operator
import sys
import uuid
from contextlib import contextmanager
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

EXTRAS = {
    "when": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    "day": datetime.date(2026, 1, 2),
    "key": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "tags": {"a", "b"},
    "pair": (1, "two"),
    "price": decimal.Decimal("9.99"),
}


class State(MessagesState):
    turns: Annotated[int, operator.add]
    extras: dict[str, Any]


def chat(state: State) -> dict[str, Any]:
    last = state["messages"][-1].content
    call = {"name": "lookup", "args": {"q": last}, "id": f"call-{state.get('turns', 0)}", "type": "tool_call"}
    return {
        "messages": [
            AIMessage("", tool_calls=[call], id=f"ai-{state.get('turns', 0)}"),
            ToolMessage(f"found {last}", tool_call_id=call["id"], id=f"tool-{state.get('turns', 0)}"),
            AIMessage(f"echo {last}", id=f"echo-{state.get('turns', 0)}"),
        ],
        "turns": 1,
        "extras": EXTRAS,
    }


def ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "approve?", "turn": state.get("turns", 0)})
    return {"messages": [AIMessage(f"ok {answer}", id="ok")]}


def inner(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("from inside", id="inner")]}


def branch_a(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("a done", id="a")], "turns": 1}


def branch_b(state: State) -> dict[str, Any]:
    raise RuntimeError("b failed")


def graphs(saver: Any) -> dict[str, Any]:
    sub = StateGraph(State).add_node("inner", inner).add_edge(START, "inner").add_edge("inner", END).compile()
    return {
        "chat": StateGraph(State).add_node("chat", chat).add_edge(START, "chat").add_edge("chat", END),
        "paused": StateGraph(State)
        .add_node("chat", chat)
        .add_node("ask", ask)
        .add_edge(START, "chat")
        .add_edge("chat", "ask")
        .add_edge("ask", END),
        "sub": StateGraph(State).add_node("outer", sub).add_edge(START, "outer").add_edge("outer", END),
        "failed": StateGraph(State)
        .add_node("a", branch_a)
        .add_node("b", branch_b)
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", END)
        .add_edge("b", END),
    }


@contextmanager
def open_saver(backend: str, target: str) -> Any:
    if backend == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(target) as saver:
            saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(target) as saver:
            saver.setup()
            yield saver


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def write(saver: Any) -> None:
    built = {name: g.compile(checkpointer=saver) for name, g in graphs(saver).items()}
    for word in ("hi", "again", "third"):
        built["chat"].invoke({"messages": [HumanMessage(word, id=f"h-{word}")]}, config("chat"))
    built["paused"].invoke({"messages": [HumanMessage("please", id="h-please")]}, config("paused"))
    built["sub"].invoke({"messages": [HumanMessage("go in", id="h-go")]}, config("sub"))
    try:
        built["failed"].invoke({"messages": [HumanMessage("split", id="h-split")]}, config("failed"))
    except RuntimeError:
        pass


def check(saver: Any) -> None:
    built = graphs(saver)["chat"].compile(checkpointer=saver)
    built.invoke({"messages": [HumanMessage("from langgraph", id="h-lg")]}, config("chat"))


def summary(saver: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    built = {name: g.compile(checkpointer=saver) for name, g in graphs(saver).items()}
    for name, graph in built.items():
        state = graph.get_state(config(name))
        out[name] = {
            "messages": [[m.type, m.content, m.id] for m in state.values.get("messages", [])],
            "turns": state.values.get("turns", 0),
            "next": list(state.next),
            "interrupts": [i.value for i in state.interrupts],
            "checkpoints": sum(  # the root namespace's (LangGraph lists every namespace here)
                1 for c in saver.list(config(name)) if not c.config["configurable"]["checkpoint_ns"]
            ),
        }
    return out


def main() -> None:
    mode, backend, target = sys.argv[1:4]
    with open_saver(backend, target) as saver:
        if mode == "setup":
            print("{}")
            return
        (write if mode == "write" else check)(saver)
        print(json.dumps(summary(saver)))


if __name__ == "__main__":
    main()
