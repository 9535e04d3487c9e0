"""Hostile rows in real SQLite files and PostgreSQL: bombs, junk that decodes as data, raw errors.

Each test plants bytes an attacker (or a disk fault) could have put into a row and checks that every
read path (``get_state``, ``get_state_history``, ``plait show``, ``plait migrate``) raises a typed
``SerializationError`` naming where, within bounded memory (the peak resident size of a subprocess, and tracemalloc).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tracemalloc
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from plait.checkpoint import _ext as codes
from plait.checkpoint.serde import Serializer, _bound
from plait.checkpoint.serde._bound import FLOOR, _estimate, check
from plait.checkpoint.sqlite import SqliteSaver
from plait.cli import main
from plait.errors import SerializationError
from plait.graph import END, START, MessagesState, StateGraph

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _langgraph import langgraph  # noqa: E402
from _pg import private_schema  # noqa: E402

CONFIG = {"configurable": {"thread_id": "t"}}


def _echo(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"echo {len(state['messages'])}", id=f"ai-{uuid.uuid4().hex[:6]}")]}


def _graph(saver: Any) -> Any:
    return (
        StateGraph(MessagesState)
        .add_node("echo", _echo)
        .add_edge(START, "echo")
        .add_edge("echo", END)
        .compile(checkpointer=saver)
    )


def _open(target: str) -> Any:
    if target.startswith("postgresql://"):
        from plait.checkpoint.postgres import PostgresSaver

        return PostgresSaver.from_conn_string(target)
    return SqliteSaver.from_conn_string(target)


def _fill(target: str) -> None:
    with _open(target) as saver:
        getattr(saver, "setup", lambda: None)()
        graph = _graph(saver)
        for text in ("hi", "more " * 60):
            graph.invoke({"messages": [HumanMessage(text)]}, CONFIG)


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A real database holding thread 't' (two turns of a chat), SQLite file or PostgreSQL schema."""
    if request.param == "sqlite":
        path = str(tmp_path / "app.sqlite")
        _fill(path)
        yield path
        return
    with private_schema("plait_hostile") as dsn:
        _fill(dsn)
        yield dsn


def _execute(target: str, sql: str, args: list[Any]) -> None:
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), args)  # type: ignore[arg-type]  # fixed SQL of this file
        return
    conn = sqlite3.connect(target)
    with conn:
        conn.execute(sql, args)
    conn.close()


def _plant_value(target: str, channel: str, value: bytes) -> None:
    """Every stored value of ``channel`` replaced by ``value`` (a full value, no delta)."""
    if target.startswith("postgresql://"):
        sql = "UPDATE plait_checkpoint_blobs SET type = 'full', prev_id = NULL, blob = ? WHERE channel = ?"
    else:
        sql = "UPDATE plait_checkpoint_blobs SET kind = 'full', prev_id = NULL, value = ? WHERE channel = ?"
    _execute(target, sql, [value, channel])


def _plant_write(target: str, channel: str, value: bytes) -> None:
    """A pending write of ``channel`` on the thread's newest checkpoint."""
    with _open(target) as saver:
        head = saver.get_tuple(CONFIG)
    table, column = (
        ("plait_checkpoint_writes", "blob")
        if target.startswith("postgresql://")
        else ("checkpoint_writes", "value")
    )
    _execute(
        target,
        f"INSERT INTO {table} (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, "  # noqa: S608 - fixed names
        f"{column}) VALUES ('t', '', ?, 'task-x', 0, ?, '', ?)",
        [head.checkpoint["id"], channel, value],
    )


def _message(fields: dict[str, Any]) -> bytes:
    """A stored list holding one AIMessage record (class number 1) with ``fields``."""
    return ormsgpack.packb([ormsgpack.Ext(codes.KNOWN_PYDANTIC, ormsgpack.packb([1, fields]))])


def _reads_fail(target: str, match: str) -> None:
    with _open(target) as saver:
        graph = _graph(saver)
        with pytest.raises(SerializationError, match=match):
            graph.get_state(CONFIG)
        with pytest.raises(SerializationError, match=match):
            list(graph.get_state_history(CONFIG))


# -- decoding bounded by the row's size ---------------------------------------------------------------


def _bomb(maps: int = 4_000_000, pad: int = 140_000) -> bytes:
    """~150 KB stored, deflated within the 32x inflate bound: 4 M empty maps (and random padding)."""
    data = ormsgpack.packb([[{}] * maps, os.urandom(pad)])
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    small = packer.compress(data) + packer.flush()
    row = b"\xc1\xff" + len(data).to_bytes(4, "big") + small
    assert len(data) <= 32 * len(row)  # inflating alone would accept it
    return row


_MEASURE = """
import resource, sys
sys.path.insert(0, {tests!r})
from test_hostile_rows import _graph, _open, CONFIG
from plait.errors import SerializationError


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


with _open({target!r}) as saver:
    graph = _graph(saver)
    for read in (lambda: graph.get_state(CONFIG), lambda: list(graph.get_state_history(CONFIG))):
        before = peak()
        try:
            read()
            print("read")
        except SerializationError as exc:
            print("refused", str(exc).replace(chr(10), " ")[:300])
        print("peak", peak() - before)
"""


def test_a_bomb_of_empty_maps_is_refused_within_bounded_memory(target: str) -> None:
    bomb = _bomb()
    _plant_value(target, "messages", bomb)
    script = _MEASURE.format(tests=str(Path(__file__).parent), target=target)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["refused", "peak", "refused", "peak"], lines
    assert "64 times its stored size" in lines[0] and "key 'messages'" in lines[0]
    for line in lines[1::2]:  # before: 268 MB for get_state, 540 MB for get_state_history
        assert int(line.split()[1]) < max(FLOOR, 64 * len(bomb)), lines


def _real_memory(value: bytes) -> int:
    ser = Serializer(compress=False)
    tracemalloc.start()
    decoded = ser.loads(value)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del decoded
    return peak


@pytest.mark.parametrize(
    "item",
    [
        {},
        [],
        None,
        1000,
        1.5,
        "ab",
        "é" * 3,
        b"x",
        {"a": None},
        {"a": 1},
        {k: 1 for k in "abcdef"},  # a dict grows at 6 items
        {k: None for k in "abcdefghijk"},  # and at 11
        ormsgpack.Ext(codes.SET, ormsgpack.packb([])),
        ormsgpack.Ext(codes.TUPLE, ormsgpack.packb([1])),
        ormsgpack.Ext(codes.KNOWN_PYDANTIC, ormsgpack.packb([0, {"content": ""}])),
        ormsgpack.Ext(codes.KNOWN_PYDANTIC, ormsgpack.packb([1, {"content": "", "id": "x"}])),
        ormsgpack.Ext(codes.DECIMAL, ormsgpack.packb("1.5")),
    ],
)
def test_the_estimate_is_at_least_what_decoding_takes(item: Any) -> None:
    value = ormsgpack.packb([item] * 20_000)
    assert _estimate(value, 2**62) >= _real_memory(value)


def test_normal_rows_are_not_walked_and_large_ones_are_estimated_closely() -> None:
    ser = Serializer()
    messages = [HumanMessage(f"question {i} " * 20, id=f"h{i}") for i in range(3000)]
    row = ser.dumps(messages)
    check(row, len(row))  # a large conversation passes
    plain = ser.dumps(messages)
    assert ser.loads(plain) == messages
    raw = ormsgpack.packb([{}] * 2_000_000)
    with pytest.raises(SerializationError, match="64 times its stored size"):
        check(raw, len(raw) // 20)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=64))
def test_walking_any_bytes_gives_an_estimate_or_a_serialization_error(data: bytes) -> None:
    try:
        assert _estimate(data, 2**62) >= 0
    except SerializationError:
        pass


# -- junk that decodes as data ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"content": "x", "additional_kwargs": 5}, "additional_kwargs"),
        ({"content": "x", "tool_calls": 7}, "tool_calls"),
        ({"content": "x", "tool_calls": [7]}, "tool_calls"),
        ({"content": "x", "response_metadata": [1]}, "response_metadata"),
    ],
)
def test_message_records_with_wrong_typed_fields_are_refused(
    target: str, fields: dict[str, Any], named: str
) -> None:
    _plant_value(target, "messages", _message(fields))
    _reads_fail(target, f"AIMessage from its fields .*{named}")


def test_a_messages_key_holding_a_non_list_is_refused_naming_where(target: str) -> None:
    _plant_value(target, "messages", ormsgpack.packb({"not": "a list"}))
    _reads_fail(target, r"thread 't', checkpoint .*, key 'messages'.*holds a list.*dict")


def test_a_junk_interrupt_write_is_a_serialization_error(target: str) -> None:
    _plant_write(target, "__interrupt__", ormsgpack.packb(5))
    with _open(target) as saver:
        with pytest.raises(SerializationError, match=r"interrupts of task .*thread 't'.*key '__interrupt__'"):
            _graph(saver).get_state(CONFIG)


def test_plait_show_reports_a_bad_row_as_one_error_line(tmp_path: Path) -> None:
    path = str(tmp_path / "app.sqlite")
    _fill(path)
    _plant_value(path, "messages", _message({"content": "x", "tool_calls": 7}))
    out = CliRunner().invoke(main, ["show", path, "t"])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert "Error:" in out.output and "AIMessage" in out.output


# -- LangGraph rows in migrate -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def lg_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("lg") / "langgraph.sqlite")
    langgraph("write", "sqlite", path)
    return path


def _lg_message(fields: dict[str, Any]) -> bytes:
    """An AIMessage as LangGraph stores one (a pydantic v2 record) with ``fields``."""
    record = ["langchain_core.messages.ai", "AIMessage", fields, "model_validate_json"]
    return ormsgpack.packb(ormsgpack.Ext(5, ormsgpack.packb(record)))


def _plant_lg(
    source: str, tmp_path: Path, kind: str, value: bytes, where: tuple[str, str] = ("chat", "turns")
) -> str:
    """A copy of LangGraph's file with the task writes of ``where`` (thread, channel) replaced."""
    path = str(tmp_path / "lg.sqlite")
    conn = sqlite3.connect(source)
    copy = sqlite3.connect(path)
    conn.backup(copy)
    conn.close()
    with copy:
        done = copy.execute(
            "UPDATE writes SET type = ?, value = ? WHERE thread_id = ? AND channel = ?", [kind, value, *where]
        )
        assert done.rowcount > 0
    copy.close()
    return path


@pytest.mark.parametrize(
    ("kind", "value", "said"),
    [
        ("json", b"[" * 100_000 + b"]" * 100_000, "corrupt json value"),
        ("msgpack", ormsgpack.packb([{}] * 1_200_000), "64 times its stored size"),
        ("msgpack", _lg_message({"content": "x", "additional_kwargs": 5}), "AIMessage from its fields"),
    ],
)
def test_migrate_reports_a_hostile_langgraph_row_and_imports_the_other_threads(
    lg_file: str, tmp_path: Path, kind: str, value: bytes, said: str
) -> None:
    source = _plant_lg(lg_file, tmp_path, kind, value)
    target = str(tmp_path / "out.sqlite")
    out = CliRunner().invoke(main, ["migrate", "--from-langgraph", source, "--to", target])
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    assert "failed thread 'chat'" in out.output and "key 'turns'" in out.output and said in out.output
    assert "imported thread 'paused'" in out.output
    with SqliteSaver.from_conn_string(target) as saver:
        assert {t.thread_id for t in saver.threads()} == {"failed", "paused", "sub"}
    assert json.dumps(out.output)  # one readable report


def test_migrate_refuses_a_junk_interrupt_write(lg_file: str, tmp_path: Path) -> None:
    source = _plant_lg(lg_file, tmp_path, "msgpack", ormsgpack.packb(5), ("paused", "__interrupt__"))
    out = CliRunner().invoke(
        main, ["migrate", "--from-langgraph", source, "--to", str(tmp_path / "out.sqlite")]
    )
    assert out.exit_code == 1 and "Traceback" not in out.output, out.output
    assert "failed thread 'paused'" in out.output and "not a list of Interrupt" in out.output
    assert "key '__interrupt__'" in out.output and "imported thread 'chat'" in out.output


def test_rows_below_the_walking_threshold_fit_the_floor_whatever_they_hold() -> None:
    worst = max(
        _estimate(ormsgpack.packb([item] * 1000), 2**62) / len(ormsgpack.packb([item] * 1000))
        for item in ({}, [], None, "", ormsgpack.Ext(codes.SET, b"\x90"), {"": None})
    )
    assert worst <= _bound._WORST and _bound.SKIP * _bound._WORST <= FLOOR
