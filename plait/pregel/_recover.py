"""Node error handlers at run time: a failed task handed over to its handler, within the step.

A node added with ``error_handler=`` that fails for good (its retries spent; interrupts and
other :class:`~plait.errors.GraphBubbleUp` pass by) does not fail the step. The driver hands
it over (:func:`hand_over`) as soon as it has settled, while the step's other tasks may still
run: the failed task counts as done and writes nothing (its edges do not fire), and a handler
task takes its place, with the same input. The handler's writes and ``Command`` are applied
with the step's, in the failed task's place.

If the step stops (an interrupt, another task's error), the failure is kept with the step's
pending writes (:func:`failure_writes`): resuming runs the handler, never the node again
(:func:`resume_step`); a handler that had finished is replayed like any finished task.
"""

from __future__ import annotations

from typing import Any, Protocol

from plait.checkpoint.base import ERROR
from plait.errors import GraphBubbleUp, NodeError, StoredNodeError
from plait.pregel._plan import Plan
from plait.pregel._settings import RunSettings
from plait.pregel._task import Task

__all__ = [
    "ERROR_SOURCE",
    "ResumedRun",
    "failure_writes",
    "hand_over",
    "resume_step",
    "stopped",
    "with_recoveries",
]

ERROR_SOURCE = "__error_source_node__"
"""Pending-write key marking a failed task whose error handler took over (value: the error, as text)."""


class ResumedRun(Protocol):
    """What :func:`resume_step` reads of a run (:class:`~plait.pregel._loop.Loop`): its settings (the
    plan), the ids of its step's tasks, and the writes of the tasks that finished before the pause
    (taken out)."""

    @property
    def settings(self) -> RunSettings: ...
    @property
    def done_writes(self) -> dict[str, list[tuple[str, Any]]]: ...
    def task_id(self, task: Task) -> str: ...


def hand_over(plan: Plan, task: Task) -> Task | None:
    """The error handler task that takes over ``task``, when it failed for good and has a handler.

    ``task`` then counts as done, without writes; its error moves to ``task.handled``.
    """
    error = task.error
    if error is None or task.node.error_handler is None or isinstance(error, GraphBubbleUp):
        return None
    return _take_over(plan, task, error)


def _take_over(plan: Plan, task: Task, error: BaseException) -> Task:
    handler = task.node.error_handler
    assert handler is not None  # noqa: S101 - callers check it
    task.handled, task.error, task.done, task.result = error, None, True, None
    task.writes.clear()
    task.goto.clear()
    recovery = Task(
        handler,
        plan.nodes[handler],
        task.input,
        index=task.index,
        source=task,
        failure=NodeError(task.name, error),
    )
    task.recovery = recovery
    return recovery


def with_recoveries(tasks: list[Task]) -> list[Task]:
    """The step's tasks, each error handler task right after the task it took over (``tasks``
    itself when no handler took over)."""
    for task in tasks:
        if task.recovery is not None:
            break
    else:
        return tasks
    present = {id(t) for t in tasks}
    out: list[Task] = []
    for task in tasks:
        out.append(task)
        if task.recovery is not None and id(task.recovery) not in present:
            out.append(task.recovery)
    return out


def stopped(tasks: list[Task]) -> bool:
    """Whether a task of the step failed or paused (the step does not complete)."""
    for t in tasks:
        if t.error is not None or t.interrupts:
            return True
    return False


def failure_writes(task: Task) -> list[tuple[str, Any]]:
    """The pending writes that keep a handed-over failure: its error, and the marker (with the error too).

    Errors are kept as text (their ``repr``): exceptions are not stored as such.
    """
    error = task.handled
    text = str(error) if isinstance(error, StoredNodeError) else repr(error)
    return [(ERROR, text), (ERROR_SOURCE, text)]


def resume_step(loop: ResumedRun, tasks: list[Task]) -> list[Task]:
    """The tasks of a step resumed after a pause, with what it stored (``loop.done_writes``).

    Tasks that finished replay their writes and do not run again. Failed tasks their error
    handlers took over stay done, and the handlers run in their place (the stored error comes as
    a :class:`~plait.errors.StoredNodeError`; a node that has no handler any more runs again).
    """
    done_writes = loop.done_writes
    for task in tasks:
        done = done_writes.pop(loop.task_id(task), None)
        if done is not None:  # finished before the pause: its writes are replayed
            task.writes, task.done, task.cached = done, True, True
    if not any(key == ERROR_SOURCE for task in tasks for key, _ in task.writes):
        return tasks
    for task in tasks:
        stored = next((v for k, v in task.writes if k == ERROR_SOURCE), None)
        if stored is None:
            continue
        if task.node.error_handler is None:  # no handler any more: the node runs again
            task.writes, task.done, task.cached = [], False, False
            continue
        recovery = _take_over(loop.settings.plan, task, StoredNodeError(str(stored)))
        task.reported = True  # its failure was streamed when it happened
        done = done_writes.pop(loop.task_id(recovery), None)
        if done is not None:  # the handler finished before the pause
            recovery.writes, recovery.done, recovery.cached = done, True, True
    return with_recoveries(tasks)
