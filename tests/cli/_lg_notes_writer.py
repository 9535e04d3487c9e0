"""Run by LangGraph's own interpreter (/tmp/lgref): threads whose newest checkpoint holds a user class.

Usage: ``python _lg_notes_writer.py PATH`` with ``notes_models`` (a dataclass ``Note``) on PYTHONPATH.
Writes thread ``notes`` (its last step stores a ``Note``), thread ``plain`` (plain data only) and
thread ``asks`` (paused at an interrupt: its head checkpoint has pending writes).
Never imports plait.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from notes_models import Note  # type: ignore[import-not-found]


class State(TypedDict, total=False):
    text: str
    note: Any


def first(state: State) -> dict[str, Any]:
    return {"text": state["text"] + " first"}


def second(state: State) -> dict[str, Any]:
    return {"text": state["text"] + " second", "note": Note("kept", 3)}


def ask(state: State) -> dict[str, Any]:
    return {"text": state["text"] + " " + str(interrupt("which?"))}


def main(path: str) -> None:
    graph = StateGraph(State).add_node("first", first).add_node("second", second)
    graph.add_edge(START, "first").add_edge("first", "second").add_edge("second", END)
    conn = sqlite3.connect(path, check_same_thread=False)
    app = graph.compile(checkpointer=SqliteSaver(conn))
    app.invoke({"text": "notes"}, {"configurable": {"thread_id": "notes"}})
    plain = StateGraph(State).add_node("first", first).add_edge(START, "first").add_edge("first", END)
    plain.compile(checkpointer=SqliteSaver(conn)).invoke(
        {"text": "plain"}, {"configurable": {"thread_id": "plain"}}
    )
    asks = StateGraph(State).add_node("first", first).add_node("ask", ask)
    asks.add_edge(START, "first").add_edge("first", "ask").add_edge("ask", END)
    asks.compile(checkpointer=SqliteSaver(conn)).invoke(
        {"text": "asks"}, {"configurable": {"thread_id": "asks"}}
    )
    counts = dict(conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id").fetchall())
    conn.close()
    print(json.dumps(counts))


if __name__ == "__main__":
    main(sys.argv[1])
