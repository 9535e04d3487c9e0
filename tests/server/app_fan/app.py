"""One graph for tests/server/test_delete_running.py: one step of two nodes, one done at once, one slow."""

from __future__ import annotations

import operator
import os
import time
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.graph import END, START, StateGraph


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def fast(state: Log) -> dict[str, Any]:
    return {"log": ["fast"]}


def slow(state: Log) -> dict[str, Any]:
    time.sleep(float(os.environ.get("PLAIT_TEST_SLEEP", "2")))
    return {"log": ["slow"]}


graph = (
    StateGraph(Log)
    .add_node("fast", fast)
    .add_node("slow", slow)
    .add_edge(START, "fast")
    .add_edge(START, "slow")
    .add_edge("fast", END)
    .add_edge("slow", END)
    .compile()
)
