"""Tuples after a checkpoint round trip: lists, as LangGraph 1.2.24 reads them (MessagePack has no tuple).

LangGraph itself (its own interpreter) runs the same graph; the values read back must have the same repr.
Dict keys and set members stay tuples (a list cannot be one).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import pytest

from plait.checkpoint.memory import InMemorySaver
from plait.checkpoint.sqlite import SqliteSaver
from plait.graph import END, START, StateGraph

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _langgraph import LGREF, require_langgraph  # noqa: E402

WRITE = {
    "top": ("user", "q3"),
    "lst": [("user", "q3"), 1],
    "dct": {"k": ("a", 1), "n": [("x",)]},
    "deep": [[("a", ("b", "c"))], {"t": (1, (2, 3))}],
    "empty": (),
    "keyed": {"k": {("a", ("b",)): [("x", 1)]}},
}
GRAPH = """
from typing import Any, TypedDict
from {package} import END, START, StateGraph


class S(TypedDict):
    top: Any
    lst: list
    dct: dict
    deep: Any
    empty: Any
    keyed: Any


def node(state):
    return {write!r}


graph = StateGraph(S).add_node("n", node).add_edge(START, "n").add_edge("n", END)
"""
LANGGRAPH = (
    GRAPH.format(package="langgraph.graph", write=WRITE)
    + """
import sqlite3
from langgraph.checkpoint.sqlite import SqliteSaver
app = graph.compile(checkpointer=SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False)))
config = {"configurable": {"thread_id": "t"}}
print(repr(app.invoke({"top": None}, config)))
print(repr(app.get_state(config).values))
"""
)


class S(TypedDict):
    top: Any
    lst: list[Any]
    dct: dict[str, Any]
    deep: Any
    empty: Any
    keyed: Any


def _node(state: S) -> dict[str, Any]:
    return dict(WRITE)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_tuples_read_back_as_langgraph_reads_them(backend: str, tmp_path: Path) -> None:
    require_langgraph()
    done = subprocess.run(
        [str(LGREF), "-c", LANGGRAPH], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lg_invoked, lg_state = done.stdout.strip().splitlines()[-2:]
    graph = StateGraph(S).add_node("n", _node).add_edge(START, "n").add_edge("n", END)
    config = {"configurable": {"thread_id": "t"}}
    if backend == "memory":
        app = graph.compile(checkpointer=InMemorySaver())
        invoked, state = app.invoke({"top": None}, config), app.get_state(config).values
    else:
        with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
            app = graph.compile(checkpointer=saver)
            invoked, state = app.invoke({"top": None}, config), app.get_state(config).values
    assert repr(invoked) == lg_invoked  # what the run returns keeps the tuples, in both
    assert repr(state) == lg_state  # what a checkpoint holds reads back with lists
    assert state["top"] == ["user", "q3"] and state["lst"] == [["user", "q3"], 1]
    assert state["keyed"] == {"k": {("a", ("b",)): [["x", 1]]}}
