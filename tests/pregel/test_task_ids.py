"""Task ids are UUIDs (subgraph namespaces ``node:<uuid>``), and pending writes stored with the
task ids of earlier plait versions (``<checkpoint>:<node>:<index>``) are still found."""

from __future__ import annotations

import operator
import pathlib
import sqlite3
import uuid
from typing import Annotated, Any, TypedDict

from plait.checkpoint.base import INTERRUPT
from plait.checkpoint.sqlite import SqliteSaver
from plait.graph import START, StateGraph
from plait.types import Command, Interrupt, interrupt


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _is_uuid(text: str) -> bool:
    return str(uuid.UUID(text)) == text


def _fan_out(saver: SqliteSaver, calls: list[str], questions: int = 1) -> Any:
    """``a`` and ``b`` in one step: ``a`` finishes, ``b`` asks ``questions`` questions."""

    def a(state: State) -> dict[str, list[str]]:
        calls.append("a")
        return {"log": ["a"]}

    def b(state: State) -> dict[str, list[str]]:
        answers = [str(interrupt("sure?" if n == 0 else f"q{n + 1}")) for n in range(questions)]
        return {"log": [f"b:{':'.join(answers)}"]}

    builder = StateGraph(State).add_node("a", a).add_node("b", b)
    return builder.add_edge(START, "a").add_edge(START, "b").compile(checkpointer=saver)


def test_task_ids_are_uuids_and_subgraph_namespaces_have_two_parts(tmp_path: pathlib.Path) -> None:
    inner = StateGraph(State).add_node("ask", lambda s: {"log": [f"ans:{interrupt('q')}"]})
    inner = inner.add_edge(START, "ask").compile()
    cfg = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "db.sqlite")) as saver:
        graph = StateGraph(State).add_node("sub", inner).add_edge(START, "sub").compile(checkpointer=saver)
        namespaces = [ns for ns, _ in graph.stream({"log": []}, cfg, subgraphs=True) if ns]
        assert namespaces
        for (part,) in namespaces:
            node, task = part.split(":")  # how LangGraph clients read a namespace
            assert node == "sub" and _is_uuid(task)
        state = graph.get_state(cfg, subgraphs=True)
        (task,) = state.tasks
        assert _is_uuid(task.id) and namespaces[0][0] == f"sub:{task.id}"
        assert (
            task.state is not None and task.state.config["configurable"]["checkpoint_ns"] == f"sub:{task.id}"
        )
        assert graph.get_state(cfg).tasks[0].id == task.id  # the same task, read again
        assert graph.invoke(Command(resume="ok"), cfg) == {"log": ["ans:ok"]}


def _old_thread(path: pathlib.Path, calls: list[str], questions: int) -> str:
    """A thread paused in step a+b, its pending writes stored as an earlier plait stored them."""
    cfg = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = _fan_out(saver, calls, questions)
        graph.invoke({"log": []}, cfg)
        head = graph.get_state(cfg)
    cid = head.config["configurable"]["checkpoint_id"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("DELETE FROM checkpoint_writes WHERE checkpoint_id = ?", (cid,)).rowcount == 2
    with SqliteSaver.from_conn_string(str(path)) as saver:  # the writes as the earlier plait stored them
        saver.put_writes(head.config, [("log", ["a"])], f"{cid}:a:0")
        saver.put_writes(head.config, [(INTERRUPT, [Interrupt("sure?", id=f"{cid}:b:0:0")])], f"{cid}:b:0")
    return str(cid)


def test_pending_writes_stored_with_old_task_ids_are_found(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "old.sqlite"
    cfg = {"configurable": {"thread_id": "t"}}
    calls: list[str] = []
    cid = _old_thread(path, calls, 1)
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = _fan_out(saver, calls)
        state = graph.get_state(cfg)
        assert state.next == ("b",) and len(state.interrupts) == 1  # a counts as finished
        assert state.values == {"log": ["a"]}
        (question,) = state.interrupts
        assert question.id == f"{cid}:b:0:0"  # answered by its old id
        out = graph.invoke(Command(resume={question.id: "yes"}), cfg)
    assert out == {"log": ["a", "b:yes"]}
    assert calls == ["a"]  # a's stored writes were used: it did not run again


def test_an_old_thread_that_pauses_again_keeps_one_copy_of_each_write(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "old.sqlite"
    cfg = {"configurable": {"thread_id": "t"}}
    calls: list[str] = []
    _old_thread(path, calls, 2)
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = _fan_out(saver, calls, 2)
        graph.invoke(Command(resume="one"), cfg)  # b asks its second question: the step pauses again
        state = graph.get_state(cfg)
        assert [i.value for i in state.interrupts] == ["q2"]  # the answered question is not pending
        assert state.values == {"log": ["a"]}
        out = graph.invoke(Command(resume="two"), cfg)
    assert out == {"log": ["a", "b:one:two"]}  # a's writes applied once
    assert calls == ["a"]
