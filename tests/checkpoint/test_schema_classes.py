"""Classes a graph's own schemas name are stored in its checkpoints without ``allow()``; others stay refused.

Each program runs in a fresh interpreter: ``allow()`` is process-wide, so a test process that allowed
the class earlier would prove nothing.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = """
import enum, sys
from dataclasses import dataclass
from typing import Annotated, NamedTuple, Optional, TypedDict

from pydantic import BaseModel

from plait.checkpoint.sqlite import SqliteSaver
from plait.errors import SerializationError
from plait.graph import END, START, StateGraph


class Level(enum.Enum):
    HIGH = "high"


class Point(NamedTuple):
    x: int
    y: int


class Note(BaseModel):
    text: str
    level: Level


@dataclass
class PriorityItem:  # seed 002's program
    priority: int
    task: str
    note: Optional[Note] = None


def priority_merge(left: list[PriorityItem], right: list[PriorityItem]) -> list[PriorityItem]:
    return sorted(left + right, key=lambda item: item.priority)


class State(TypedDict):
    tasks: Annotated[list[PriorityItem], priority_merge]
    where: dict[str, Point]
    other: object


@dataclass
class Unnamed:  # named by no schema of the graph
    value: int


def add(state: State) -> dict:
    item = PriorityItem(1, "urgent", Note(text="now", level=Level.HIGH))
    return {"tasks": [item], "where": {"home": Point(1, 2)}}


def stray(state: State) -> dict:
    return {"other": Unnamed(3)}


graph = StateGraph(State).add_node("add", add).add_edge(START, "add").add_edge("add", END)
with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
    app = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"tasks": [PriorityItem(5, "later")], "where": {}}, config)
    tasks = app.get_state(config).values["tasks"]
    print([(t.priority, t.task, t.note.level.value if t.note else None) for t in tasks])
    print(app.get_state(config).values["where"]["home"])
    bad = StateGraph(State).add_node("stray", stray).add_edge(START, "stray").compile(checkpointer=saver)
    try:
        bad.invoke({"tasks": []}, {"configurable": {"thread_id": "u"}})
    except SerializationError as exc:
        print("refused", "Unnamed" in str(exc))
"""


def test_classes_named_by_the_schemas_round_trip_and_others_are_refused(tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(PROGRAM))
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "threads.sqlite")],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert out.stdout.splitlines() == [
        "[(1, 'urgent', 'high'), (5, 'later', None)]",
        "Point(x=1, y=2)",
        "refused True",
    ]
