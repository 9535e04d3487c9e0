"""A thread paused inside a subgraph by an earlier plait (task ids ``<checkpoint>:<node>:<index>``,
namespace ``node:<task id>`` or ``node:<task id>:0``) resumes."""

from __future__ import annotations

import asyncio
import operator
import pathlib
import sqlite3
from typing import Annotated, Any, TypedDict

import pytest

from plait.checkpoint._task_ids import task_key
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


def _to_old_form(path: pathlib.Path, *, call_number: bool) -> int:
    """Rewrite the thread as earlier plait versions stored it: task ids ``<checkpoint>:<node>:<index>``
    (in pending writes and subgraph namespaces), and with ``call_number`` one more ``:0``."""
    changed = 0
    with sqlite3.connect(path) as conn:
        ids = [r[0] for r in conn.execute("SELECT DISTINCT checkpoint_id FROM checkpoints")]
        renames = [(task_key(c, n, 0), f"{c}:{n}:0") for c in ids for n in ("__start__", "sub", "s1", "ask")]
        for new, old in renames:
            changed += conn.execute(
                "UPDATE checkpoint_writes SET task_id = ? WHERE task_id = ?", (old, new)
            ).rowcount
            for table in ("checkpoints", "checkpoint_writes", "plait_checkpoint_blobs"):
                changed += conn.execute(
                    f"UPDATE {table} SET checkpoint_ns = replace(checkpoint_ns, ?, ?) "  # noqa: S608 - plait's table names
                    "WHERE instr(checkpoint_ns, ?) > 0",
                    (new, old, new),
                ).rowcount
        if call_number:
            for table in ("checkpoints", "checkpoint_writes", "plait_checkpoint_blobs"):
                conn.execute(
                    f"UPDATE {table} SET checkpoint_ns = checkpoint_ns || ':0' WHERE checkpoint_ns <> ''"
                )  # noqa: S608 - plait's table names
    return changed


@pytest.mark.parametrize("call_number", [False, True], ids=["task-id", "task-id-and-call"])
@pytest.mark.parametrize("driver", ["sync", "async"])
def test_a_thread_paused_under_the_old_namespace_resumes(
    tmp_path: pathlib.Path, driver: str, call_number: bool
) -> None:
    path = tmp_path / "old.sqlite"
    cfg = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(str(path)) as saver:
        assert "__interrupt__" in _graph(saver).invoke({"log": []}, cfg)
    assert _to_old_form(path, call_number=call_number) > 0
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = _graph(saver)
        snap = (
            graph.get_state(cfg, subgraphs=True)
            if driver == "sync"
            else asyncio.run(graph.aget_state(cfg, subgraphs=True))
        )
        (task,) = snap.tasks  # the paused subgraph's state is found
        assert task.state is not None and task.state.next == ("ask",) and task.state.values == {"log": ["s1"]}
        if driver == "sync":
            out = graph.invoke(Command(resume="yes"), cfg)
        else:
            out = asyncio.run(graph.ainvoke(Command(resume="yes"), cfg))
        assert out == {"log": ["s1", "ans:yes"]}  # s1 did not run again: the old state was found
