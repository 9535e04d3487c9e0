"""A thread paused inside a subgraph by an earlier plait (namespace ``node:<task id>:0``) resumes."""

from __future__ import annotations

import asyncio
import operator
import pathlib
import sqlite3
from typing import Annotated, Any, TypedDict

import pytest

from plait.checkpoint.sqlite import SqliteSaver
from plait.graph import START, StateGraph
from plait.types import Command, interrupt


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(saver: SqliteSaver) -> Any:
    def ask(state: State) -> dict[str, list[str]]:
        return {"log": [f"ans:{interrupt('sure?')}"]}

    inner = StateGraph(State).add_node("s1", lambda s: {"log": ["s1"]}).add_node("ask", ask)
    inner = inner.add_edge(START, "s1").add_edge("s1", "ask").compile()
    return StateGraph(State).add_node("sub", inner).add_edge(START, "sub").compile(checkpointer=saver)


def _to_old_names(path: pathlib.Path) -> int:
    """Rename the subgraph's namespace as the earlier plait wrote it: one more ``:0``."""
    renamed = 0
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if "checkpoint_ns" in columns:
                renamed += conn.execute(
                    f"UPDATE {table} SET checkpoint_ns = checkpoint_ns || ':0' WHERE checkpoint_ns <> ''"  # noqa: S608 - names from sqlite_master
                ).rowcount
    return renamed


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_thread_paused_under_the_old_namespace_resumes(tmp_path: pathlib.Path, driver: str) -> None:
    path = tmp_path / "old.sqlite"
    cfg = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(str(path)) as saver:
        assert "__interrupt__" in _graph(saver).invoke({"log": []}, cfg)
    assert _to_old_names(path) > 0
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = _graph(saver)
        if driver == "sync":
            out = graph.invoke(Command(resume="yes"), cfg)
        else:
            out = asyncio.run(graph.ainvoke(Command(resume="yes"), cfg))
        assert out == {"log": ["s1", "ans:yes"]}  # s1 did not run again: the old state was found
