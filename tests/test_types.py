"""plait.types additions from LangGraph: the v2 stream part types and ensure_valid_checkpointer."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from typing_extensions import TypedDict, get_type_hints

from plait.checkpoint.memory import InMemorySaver
from plait.config import get_stream_writer
from plait.errors import TaskNotFound
from plait.graph import START, StateGraph
from plait.types import (
    CustomStreamPart,
    StreamPart,
    UpdatesStreamPart,
    ValuesStreamPart,
    ensure_valid_checkpointer,
)


class State(TypedDict):
    n: int


def test_v2_stream_parts_have_the_declared_keys() -> None:
    def node(state: State) -> dict[str, Any]:
        get_stream_writer()("hi")
        return {"n": 1}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    parts = list(graph.stream({"n": 0}, stream_mode=["values", "updates", "custom"], version="v2"))
    declared = {"values": ValuesStreamPart, "updates": UpdatesStreamPart, "custom": CustomStreamPart}
    assert {p["type"] for p in parts} == set(declared)
    for part in parts:
        assert set(part) == set(get_type_hints(declared[part["type"]])), part
    members = typing.get_args(StreamPart.__value__)
    assert len(members) == 7  # one per stream mode


def test_ensure_valid_checkpointer() -> None:
    saver = InMemorySaver()
    assert ensure_valid_checkpointer(saver) is saver
    for flag in (None, True, False):
        assert ensure_valid_checkpointer(flag) is flag
    with pytest.raises(TypeError, match="Received dict"):
        ensure_valid_checkpointer({})


def test_task_not_found_is_langgraphs_error() -> None:
    assert issubclass(TaskNotFound, Exception)
