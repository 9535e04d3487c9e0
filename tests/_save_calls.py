"""Saver calls for the batched-save tests of every backend: checkpoints of one list channel ``x``."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.checkpoint._calls import PutCheckpoint
from plait.checkpoint.base import empty_checkpoint
from plait.graph import START, StateGraph


class ListState(TypedDict):
    x: Annotated[list[str], operator.add]


def list_graph(saver: Any) -> Any:
    """``START -> a``, where ``a`` appends ``"a"`` to ``x``, on ``saver``."""
    return (
        StateGraph(ListState)
        .add_node("a", lambda s: {"x": ["a"]})
        .add_edge(START, "a")
        .compile(checkpointer=saver)
    )


def list_checkpoint(cid: str, x: list[str]) -> dict[str, Any]:
    """A checkpoint ``cid`` whose channel ``x`` holds ``x``."""
    cp: dict[str, Any] = dict(empty_checkpoint())
    cp.update(id=cid, channel_values={"x": x}, channel_versions={"x": 1})
    return cp


def put_call(parent: str | None, cid: str, x: list[str], head: Any) -> PutCheckpoint:
    """A put of :func:`list_checkpoint` on thread ``t`` after ``parent``, expecting the head ``head``."""
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    if parent is not None:
        config["configurable"]["checkpoint_id"] = parent
    return PutCheckpoint(config, list_checkpoint(cid, x), {"source": "loop", "step": 0}, {"x": 1}, head)
