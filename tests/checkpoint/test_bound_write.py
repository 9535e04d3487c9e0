"""A writer never stores what its reader refuses: the decoding bound is checked when a value is written.

Many small objects that deflate very well are stored undeflated (their stored size then covers what
they decode to); a value whose objects would take more than the bound even undeflated is refused
when written, with a typed error, and nothing of it is stored.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, TypedDict

import pytest

from plait.checkpoint._deflate import DEFLATED
from plait.checkpoint.serde import Serializer
from plait.checkpoint.serde._bound import budget
from plait.checkpoint.sqlite import SqliteSaver
from plait.constants import START
from plait.errors import SerializationError
from plait.graph import StateGraph


class S(TypedDict):
    rows: list[Any]


def _graph(rows: list[Any]) -> StateGraph[S]:
    return StateGraph(S).add_node("n", lambda s: {"rows": rows}).add_edge(START, "n")


def test_a_well_deflating_value_of_small_objects_reads_back_after_a_restart(tmp_path: Path) -> None:
    rng = random.Random(7)
    # 800k pairs of small ints: 2.4 MB of MessagePack that deflates far, so deflated the row would
    # be under 1/64 of what its objects may take decoded: it is stored undeflated, and reads back
    rows = [[i % 100, rng.randint(0, 1)] for i in range(800_000)]
    data = Serializer().dumps(rows)
    assert data[:1] != DEFLATED  # stored as it encodes
    assert Serializer().loads(data) == rows
    path = str(tmp_path / "t.sqlite")
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(path) as saver:
        _graph(rows).compile(checkpointer=saver).invoke({"rows": []}, config)
    with SqliteSaver.from_conn_string(path) as saver:  # a new process's view: nothing cached
        assert _graph(rows).compile(checkpointer=saver).get_state(config).values["rows"] == rows


def test_a_bomb_shaped_value_is_refused_when_written_and_nothing_is_stored(tmp_path: Path) -> None:
    rows: list[Any] = [{} for _ in range(1_200_000)]  # 1 byte each, 64+ bytes each once decoded
    with pytest.raises(SerializationError, match="tiny objects"):
        Serializer().dumps(rows)
    path = str(tmp_path / "t.sqlite")
    config = {"configurable": {"thread_id": "t"}}
    with SqliteSaver.from_conn_string(path) as saver:
        app = _graph(rows).compile(checkpointer=saver)
        with pytest.raises(SerializationError, match="tiny objects"):
            app.invoke({"rows": []}, config)
        head = app.get_state(config)
        assert head.values.get("rows", []) == []  # the refused value was not stored


def test_the_bound_is_the_larger_of_64_mib_and_64_times_the_stored_size() -> None:
    assert budget(10) == 64 * 1024 * 1024
    assert budget(2 * 1024 * 1024) == 128 * 1024 * 1024
