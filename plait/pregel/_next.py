"""What runs next beside the edges: the input's first step, and a ``Command(goto=...)`` on a
paused thread.

* The graph input is the pseudo-task ``START``: :func:`~plait.pregel._step.schedule` follows
  ``START``'s edges from it; in a channel graph (``Pregel(nodes=..., channels=...)``) its
  ``goto`` holds the nodes subscribed to the channels the input wrote.
* ``Command(goto=...)`` given to a thread adds its nodes to the step that was pending (a
  breakpoint's, an interrupt's): those still run. Its ``Send`` tasks replace the pending ones;
  without any, the pending ``Send`` tasks stay (as in LangGraph, where the goto is one more
  write to the step's trigger channels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plait.constants import START
from plait.pregel._plan import Plan
from plait.pregel._run_state import RunState
from plait.types import Send

__all__ = ["START_TASK", "StartTask", "keep_pending", "start_task", "subscribers"]


class StartTask:
    """The graph input, as the task that finished before the first step.

    Attributes:
        goto: A channel graph's nodes subscribed to the channels the input wrote.
    """

    name = START
    index = 0

    def __init__(self, goto: Sequence[str] = ()) -> None:
        self.goto = list(goto)
        self.writes: list[tuple[str, object]] = []


START_TASK: Any = StartTask()  # stands for a Task where the loop schedules one
"""The graph input of a graph with edges (``START``'s edges say what runs first)."""


def subscribers(triggers: Mapping[str, Sequence[str]], writes: Sequence[tuple[str, object]]) -> list[str]:
    """The nodes subscribed to the channels ``writes`` write, in the order they are first met."""
    found: dict[str, None] = {}
    for key, _ in writes:
        found.update(dict.fromkeys(triggers.get(key, ())))
    return list(found)


def start_task(plan: Plan, writes: Sequence[tuple[str, object]]) -> Any:
    """The graph input that wrote ``writes``, as :func:`~plait.pregel._step.schedule` takes it."""
    return StartTask(subscribers(plan.triggers, writes)) if plan.triggers else START_TASK


def keep_pending(command: Any, run: RunState) -> Any:
    """``command`` (the pseudo-task of a ``Command(goto=...)`` given to a thread) with the step that
    was pending added to its goto: those nodes still run, and so do the pending ``Send`` tasks
    unless it sent new ones."""
    sent = any(isinstance(target, Send) for target in command.goto)
    command.goto.extend(run.next)
    if not sent:
        command.goto.extend(Send(node, arg) for node, arg in run.sends)
    return command
