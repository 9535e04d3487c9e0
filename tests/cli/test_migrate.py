"""``plait migrate``: plait's tables, and threads imported from databases LangGraph 1.2.24 wrote itself."""

from __future__ import annotations

import hashlib
import operator
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import ormsgpack
import pytest
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage

from plait.checkpoint._task_ids import task_key
from plait.checkpoint.sqlite import SqliteSaver
from plait.cli import main
from plait.graph import END, START, MessagesState, StateGraph
from plait.types import Command, interrupt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checkpoint"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _langgraph import langgraph, require_langgraph  # noqa: E402
from _pg import private_schema  # noqa: E402


class State(MessagesState):
    turns: Annotated[int, operator.add]
    extras: dict[str, Any]


def _chat(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("plait " + state["messages"][-1].content)], "turns": 1}


def _ask(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage(f"ok {interrupt('approve?')}", id="ok")]}


def _a(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("a again", id="a2")], "turns": 1}


def _b(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage("b fixed", id="b")]}


def graphs(saver: Any) -> dict[str, Any]:
    """The writer's graphs, rebuilt with plait (same node names and edges)."""
    return {
        "chat": StateGraph(State).add_node("chat", _chat).add_edge(START, "chat").add_edge("chat", END),
        "paused": StateGraph(State)
        .add_node("chat", _chat)
        .add_node("ask", _ask)
        .add_edge(START, "chat")
        .add_edge("chat", "ask")
        .add_edge("ask", END),
        "failed": StateGraph(State)
        .add_node("a", _a)
        .add_node("b", _b)
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", END)
        .add_edge("b", END),
    }


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def run(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(main, list(args))
    assert (result.exit_code == 0) == ok, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.fixture(scope="module")
def lg_sqlite(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """A SQLite file written by LangGraph itself, and LangGraph's summary of its threads."""
    path = str(tmp_path_factory.mktemp("lg") / "langgraph.sqlite")
    return path, langgraph("write", "sqlite", path)


@pytest.fixture()
def sqlite_copy(lg_sqlite: tuple[str, dict[str, Any]], tmp_path: Path) -> str:
    path = str(tmp_path / "copy.sqlite")
    shutil.copy(lg_sqlite[0], path)
    return path


@pytest.fixture(scope="module")
def lg_postgres() -> Iterator[tuple[str, dict[str, Any]]]:
    require_langgraph()
    with private_schema("plait_lgm") as dsn:
        yield dsn, langgraph("write", "postgres", dsn)


def _langgraph_rows(target: str) -> str:
    """A digest of every row in LangGraph's tables (to prove plait never changes them)."""
    digest = hashlib.sha256()
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as conn:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"):
                for row in sorted(map(repr, conn.execute(f"SELECT * FROM {table}"))):  # noqa: S608 - fixed names
                    digest.update(row.encode())
        return digest.hexdigest()
    conn = sqlite3.connect(target)
    for table in ("checkpoints", "writes"):
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3"):  # noqa: S608 - fixed names
            digest.update(repr(row).encode())
    conn.close()
    return digest.hexdigest()


def _check_imported(saver: Any, summary: dict[str, Any]) -> None:
    built = {name: g.compile(checkpointer=saver) for name, g in graphs(saver).items()}
    for name in ("chat", "paused"):
        state = built[name].get_state(cfg(name))
        assert [[m.type, m.content, m.id] for m in state.values["messages"]] == summary[name]["messages"]
        assert state.values.get("turns", 0) == summary[name]["turns"]
        assert list(state.next) == summary[name]["next"]
        assert [i.value for i in state.interrupts] == summary[name]["interrupts"]
    for name in summary:  # the root namespace's, as the summary counts them
        root = {"configurable": {"thread_id": name, "checkpoint_ns": ""}}
        assert len(list(saver.list(root))) == summary[name]["checkpoints"]
    # a step that failed half-way: LangGraph shows the finished task's writes in the values; plait
    # keeps them as that task's result, and the failed task as the one still to run
    failed = built["failed"].get_state(cfg("failed"))
    tasks = {t.name: t for t in failed.tasks}
    assert tasks["a"].result == {"messages": [AIMessage("a done", id="a")], "turns": 1}
    assert "b failed" in str(tasks["b"].error) and summary["failed"]["next"] == ["b"]
    extras = built["chat"].get_state(cfg("chat")).values["extras"]
    assert extras["tags"] == {"a", "b"} and str(extras["key"]) == "12345678-1234-5678-1234-567812345678"
    assert extras["when"].year == 2026 and str(extras["price"]) == "9.99" and extras["pair"] == [1, "two"]
    tool_call = built["chat"].get_state(cfg("chat")).values["messages"][1].tool_calls[0]
    assert tool_call["name"] == "lookup" and tool_call["args"] == {"q": "hi"}
    # each imported thread carries on in plait: a new turn, a resumed interrupt, a retried failed branch
    out = built["chat"].invoke({"messages": [HumanMessage("more", id="more")]}, cfg("chat"))
    assert [m.content for m in out["messages"]][-2:] == ["more", "plait more"] and out["turns"] == 4
    assert built["paused"].invoke(Command(resume="yes"), cfg("paused"))["messages"][-1].content == "ok yes"
    out = built["failed"].invoke(None, cfg("failed"))
    assert [m.content for m in out["messages"]] == ["split", "a done", "b fixed"] and out["turns"] == 1
    # the subgraph's checkpoints moved into plait's namespace for the node's task: <node>:<task id>
    namespaces = [
        c.config["configurable"]["checkpoint_ns"]
        for c in saver.list(None)
        if c.config["configurable"]["thread_id"] == "sub"
    ]
    inner = [ns for ns in namespaces if ns]
    assert len(inner) == 3 and len(set(inner)) == 1
    node, _, task = inner[0].partition(":")
    parents = [
        c.checkpoint["id"] for c in saver.list({"configurable": {"thread_id": "sub", "checkpoint_ns": ""}})
    ]
    assert node == "outer" and task in {task_key(cid, "outer", 0) for cid in parents}
    assert saver.get_tuple({"configurable": {"thread_id": "sub", "checkpoint_ns": inner[0]}}) is not None


def test_sqlite_threads_of_langgraph_import_verified_and_carry_on(
    sqlite_copy: str, lg_sqlite: tuple[str, dict[str, Any]]
) -> None:
    before = _langgraph_rows(sqlite_copy)
    # plait's SQLite tables keep seed 002's names, which LangGraph's SQLite saver shares: a new file
    assert "--to" in run("migrate", "--from-langgraph", sqlite_copy, ok=False)
    target = sqlite_copy + ".plait.sqlite"
    out = run("migrate", "--from-langgraph", sqlite_copy, "--to", target)
    assert "4 thread(s), 20 checkpoint(s)" in out and "read back and matching" in out
    with SqliteSaver.from_conn_string(target) as saver:
        _check_imported(saver, lg_sqlite[1])
    assert _langgraph_rows(sqlite_copy) == before  # LangGraph's tables were only read
    again = langgraph("check", "sqlite", sqlite_copy)  # and LangGraph still works on its file
    assert again["chat"]["messages"][-1] == ["ai", "echo from langgraph", "echo-3"]
    rerun = run("migrate", "--from-langgraph", sqlite_copy, "--to", target)
    assert "kept thread 'chat'" in rerun and "thread 'paused' is already complete" in rerun


def test_postgres_threads_of_langgraph_import_into_the_same_schema_and_into_sqlite(
    lg_postgres: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    dsn, summary = lg_postgres
    before = _langgraph_rows(dsn)
    target = str(tmp_path / "from_pg.sqlite")
    assert "4 thread(s)" in run("migrate", "--from-langgraph", dsn, "--to", target)
    with SqliteSaver.from_conn_string(target) as saver:
        _check_imported(saver, summary)
    assert "4 thread(s)" in run("migrate", "--from-langgraph", dsn)
    from plait.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(dsn) as pg:
        _check_imported(pg, summary)
    assert _langgraph_rows(dsn) == before
    assert langgraph("check", "postgres", dsn)["chat"]["checkpoints"] == 12


def _plant_write(path: str, kind: str, value: bytes) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE writes SET type = ?, value = ? WHERE thread_id = 'chat' AND channel = 'turns'", [kind, value]
    )
    conn.commit()
    conn.close()


def test_pickled_rows_are_refused_naming_where_and_never_unpickled(sqlite_copy: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR."
    _plant_write(sqlite_copy, "pickle", payload)
    out = run("migrate", "--from-langgraph", sqlite_copy, "--to", str(tmp_path / "out.sqlite"), ok=False)
    assert "thread 'chat'" in out and "key 'turns'" in out and "checkpoint " in out
    assert "never unpickles" in out and not marker.exists()


def test_classes_outside_the_allow_list_are_refused(sqlite_copy: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    record = ormsgpack.packb(["subprocess", "Popen", {"args": ["touch", str(marker)]}])
    _plant_write(sqlite_copy, "msgpack", ormsgpack.packb(ormsgpack.Ext(2, record)))
    out = run("migrate", "--from-langgraph", sqlite_copy, "--to", str(tmp_path / "out.sqlite"), ok=False)
    assert "subprocess.Popen, which plait does not rebuild" in out and "key 'turns'" in out
    assert not marker.exists()


def test_bad_sources_are_clear_errors(tmp_path: Path) -> None:
    assert "give DB, or --from-langgraph SRC" in run("migrate", ok=False)
    assert "no such SQLite file" in run(
        "migrate", "--from-langgraph", str(tmp_path / "nope.sqlite"), ok=False
    )
    plait_only = str(tmp_path / "plait.sqlite")
    with SqliteSaver.from_conn_string(plait_only) as saver:
        saver.setup()
    assert "no LangGraph checkpoint tables" in run("migrate", "--from-langgraph", plait_only, ok=False)
    assert "--to" in run("migrate", plait_only, "--from-langgraph", plait_only, ok=False)


def test_imported_writes_are_compared_by_value_not_by_repr() -> None:
    from plait.checkpoint._langgraph_import import _same_write

    class Opaque:  # no __eq__: the same repr is what "the same" can mean
        def __repr__(self) -> str:
            return "Opaque()"

    tags = ["a", "b"]
    assert _same_write(("t", "extras", set(tags)), ("t", "extras", set(reversed(tags))))
    assert _same_write(("t", "x", Opaque()), ("t", "x", Opaque()))
    assert not _same_write(("t", "x", {"a"}), ("t", "x", {"b"}))
    assert not _same_write(("t", "x", 1), ("u", "x", 1))
