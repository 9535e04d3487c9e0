"""A step that did not complete: what is saved (pending writes) and what the caller sees."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from plait._internal._narrow import is_str_dict
from plait.checkpoint._task_ids import current_writes
from plait.checkpoint.base import ERROR, INTERRUPT, RESUME, CheckpointTuple
from plait.errors import InvalidUpdateError, StrictModeError
from plait.pregel._effects import PutCheckpoint, PutWrites, SaveOp
from plait.pregel._recover import failure_writes, with_recoveries
from plait.pregel._run_state import RunState
from plait.pregel._settings import RunSettings
from plait.pregel._task import Task, task_key
from plait.pregel._writes import apply_writes
from plait.types import Send

__all__ = [
    "NO_WRITES",
    "NULL_TASK_ID",
    "PausedRun",
    "abandoned_saves",
    "carry_update",
    "paused_view",
    "save_partial",
    "save_results",
    "stored_writes",
]

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
"""Task id of the pending writes of a ``Command(update=...)`` given with a resume (LangGraph's)."""
NO_WRITES = "__no_writes__"
"""Pending write of a task that finished without writing anything (LangGraph's channel name)."""


class ValuesSink(Protocol):
    """Where a run's ``values`` events go (:class:`~plait.pregel._stream.EventSink`)."""

    def values(self, output: Callable[[], dict[str, Any]]) -> None: ...


class PausedRun(Protocol):
    """What the helpers of this module read and write of a run (:class:`~plait.pregel._loop.Loop`).

    Read: the settings (plan, stream modes, saver, durability), the state, the stream and the
    checkpoint the step runs from.
    Written: the queued saves, the values a paused step shows, the checkpoint held back with
    ``durability="exit"``, and the pending-write lists (``task_writes``, ``null_writes``).
    """

    saves: list[SaveOp]
    shown: dict[str, Any] | None
    held_back: PutCheckpoint | None

    @property
    def settings(self) -> RunSettings: ...
    @property
    def run(self) -> RunState: ...
    @property
    def sink(self) -> ValuesSink: ...
    @property
    def checkpoint_id(self) -> str | None: ...
    @property
    def checkpoint_config(self) -> dict[str, Any] | None: ...
    @property
    def resumes(self) -> dict[str, list[Any]]: ...
    @property
    def task_writes(self) -> list[tuple[str, list[tuple[str, Any]]]]: ...
    @property
    def null_writes(self) -> list[tuple[str, Any]]: ...


def task_id(checkpoint_id: str | None, task: Task) -> str:
    """Deterministic id of a task within the step that follows ``checkpoint_id``.

    An error handler task's id extends the one of the task it handles (one handler may serve
    several failed tasks of a step).
    """
    source: Task | None = getattr(task, "source", None)  # the START pseudo-task has none
    if source is not None:
        return f"{task_id(checkpoint_id, source)}:{task.name}"
    return task_key(checkpoint_id, task.name, task.index)


def paused_view(loop: PausedRun, tasks: Sequence[Task]) -> None:
    """What a paused step shows: the state with the finished tasks' writes (stored as pending
    writes; the checkpoint itself does not move until the step completes)."""
    finished = [(t.name, t.writes) for t in tasks if not t.interrupts and t.error is None]
    if not finished:
        return
    view = RunState(values=dict(loop.run.values), versions=dict(loop.run.versions))
    plan = loop.settings.plan
    try:
        apply_writes(plan, view, finished)
    except (InvalidUpdateError, StrictModeError):  # reported when the step completes
        return
    loop.shown = view.values
    if "values" in loop.settings.modes:
        loop.sink.values(lambda: {k: view.values[k] for k in plan.channels if k in view.values})


def _tracked(loop: PausedRun, writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``writes`` without those to ``UntrackedValue`` keys (never stored, as in LangGraph), also inside a
    ``Send``'s argument."""
    untracked = loop.settings.plan.untracked
    if not untracked:
        return list(writes)
    out: list[tuple[str, Any]] = []
    for key, value in writes:
        if key in untracked:
            continue
        if isinstance(value, Send):
            sent: object = value.arg
            if is_str_dict(sent) and untracked & sent.keys():
                value = Send(value.node, {k: v for k, v in sent.items() if k not in untracked})
        out.append((key, value))
    return out


def save_partial(loop: PausedRun, tasks: Sequence[Task]) -> None:
    """Queue the pending writes of a step that stopped: finished tasks' writes, interrupts, errors."""
    config = loop.checkpoint_config
    if loop.settings.saver is None or config is None:
        return
    for tid, writes in loop.task_writes:  # functional-API tasks: replayed, not re-run, on resume
        loop.saves.append(PutWrites(config, writes, tid))
    loop.task_writes.clear()
    for t in tasks:
        tid = task_id(loop.checkpoint_id, t)
        if t.handled is not None:  # its error handler took over: on resume the handler runs, not the node
            loop.saves.append(PutWrites(config, failure_writes(t), tid))
        elif t.interrupts:
            # interrupts of the node's functional tasks are saved under their own ids
            own = [i for i in t.interrupts if not i.id.startswith(tid + "/")]
            if own:
                loop.saves.append(PutWrites(config, [(INTERRUPT, own)], tid))
            resumes = loop.resumes.get(tid)
            if resumes:
                loop.saves.append(PutWrites(config, [(RESUME, list(resumes))], tid))
        elif t.error is None and t.done:  # a finished task is not run again: even with no writes
            loop.saves.append(PutWrites(config, _tracked(loop, t.writes) or [(NO_WRITES, None)], tid))
        elif t.error is not None:  # shown by get_state().tasks; the task runs again on resume
            loop.saves.append(PutWrites(config, [(ERROR, repr(t.error))], tid))


def stored_writes(saved: CheckpointTuple, head: str | None) -> list[tuple[str, str, Any]]:
    """The pending writes a run starting from ``saved`` uses (old task ids translated).

    ``head``: the thread's newest checkpoint id when the run addresses ``saved`` by its id. When the
    thread has moved past ``saved``, its finished tasks run again, as in LangGraph: only the
    questions, answers, errors and a resume's update are kept, not what the tasks wrote.
    """
    cid = saved.checkpoint.get("id")
    writes = current_writes(cid, saved.pending_writes or ())
    if head is None or head == cid:
        return writes
    return [w for w in writes if w[0] == NULL_TASK_ID or w[1] in (INTERRUPT, RESUME, ERROR)]


def save_results(loop: PausedRun, tasks: Sequence[Task]) -> None:
    """Queue the writes of a completed step's tasks as pending writes of the checkpoint it ran from,
    as LangGraph keeps them: the thread's history shows them as the tasks' ``result``.

    Not with ``durability="exit"`` (that checkpoint is never stored), nor for tasks whose failure an
    error handler took over (their handler's writes are its own task's).
    """
    config = loop.checkpoint_config
    settings = loop.settings
    if settings.saver is None or config is None or settings.durability == "exit":
        return
    for t in tasks:
        if t.error is None and t.handled is None:
            loop.saves.append(
                PutWrites(
                    config, _tracked(loop, t.writes) or [(NO_WRITES, None)], task_id(loop.checkpoint_id, t)
                )
            )


def abandoned_saves(loop: PausedRun, tasks: Sequence[Task]) -> tuple[SaveOp, ...]:
    """What a run stopped in the middle of a step (cancelled, closed, timed out) still saves: the
    checkpoint ``durability="exit"`` held back, and the pending writes of the step's ``tasks``."""
    held, loop.held_back = loop.held_back, None
    if held is not None:
        loop.saves.insert(0, held)
    save_partial(loop, with_recoveries(list(tasks)))
    ops, loop.saves = tuple(loop.saves), []
    return ops


def carry_update(loop: PausedRun, writes: Sequence[tuple[str, Any]]) -> None:
    """Keep a resume's ``Command(update=...)`` as pending writes of the checkpoint it applies to.

    The step that checkpoint starts may pause again: the update is then applied once more when
    the run resumes (the savers keep one set of writes per task: earlier updates are re-sent).
    """
    if loop.settings.saver is None or loop.checkpoint_config is None or not writes:
        return
    loop.null_writes.extend(writes)
    loop.saves.append(PutWrites(loop.checkpoint_config, list(loop.null_writes), NULL_TASK_ID))
