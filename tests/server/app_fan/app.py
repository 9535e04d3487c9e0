"""One graph for tests/server/test_delete_running.py: one step of two nodes, one done at once, one slow.

The slow node runs until the test lets it end: it writes ``<gate>.started`` once "fast" wrote
``<gate>.fast``, then waits for the file ``$PLAIT_TEST_GATE`` (two minutes at most).
"""

from __future__ import annotations

import operator
import os
import pathlib
import time
from typing import Annotated, Any

from typing_extensions import TypedDict

from plait.graph import END, START, StateGraph


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _gate() -> pathlib.Path:
    return pathlib.Path(os.environ["PLAIT_TEST_GATE"])


def _wait_for(path: pathlib.Path) -> None:
    deadline = time.monotonic() + 120
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def fast(state: Log) -> dict[str, Any]:
    _gate().with_suffix(".fast").touch()
    return {"log": ["fast"]}


def slow(state: Log) -> dict[str, Any]:
    _wait_for(_gate().with_suffix(".fast"))
    _gate().with_suffix(".started").touch()
    _wait_for(_gate())
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
