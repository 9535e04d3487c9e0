"""A task (one node execution in a superstep) and how its return value becomes writes."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from plait.checkpoint._task_ids import task_key
from plait.errors import (
    ErrorCode,
    GraphDrained,
    GraphInterrupt,
    InvalidUpdateError,
    ParentCommand,
    add_note,
    create_error_message,
)
from plait.pregel._plan import NodeSpec
from plait.types import Command, Interrupt, Send, retry_delay

__all__ = ["DRAINED", "Task", "collect", "from_child", "note_task", "task_key", "task_path"]

DRAINED = "drained"
"""Id of the marker a task keeps when a subgraph inside it drained (``RunControl``)."""


# the dataclasses' default factories are the builtins; typed here with their element types
if TYPE_CHECKING:

    def _pairs() -> list[tuple[str, object]]: ...
    def _targets() -> list[object]: ...

else:
    _pairs = _targets = list


def task_path(name: str, push: int | None) -> tuple[object, ...]:
    """A task's path as LangGraph names it: pulled by the state's edges, or the ``push``-th ``Send``."""
    return ("__pregel_pull", name) if push is None else ("__pregel_push", push, False)


@dataclass(slots=True)
class Task:
    """One node execution within a superstep."""

    name: str
    node: NodeSpec
    input: object
    index: int = 0
    """Position among the step's tasks with the same name (``Send`` fan-out)."""
    push: int | None = None
    """For a task a ``Send`` started (its input is the ``Send``'s argument): that ``Send``'s
    position among the step's; ``None`` for a task the state's edges started."""
    writes: list[tuple[str, object]] = field(default_factory=_pairs)
    goto: list[object] = field(default_factory=_targets)
    done: bool = False
    error: BaseException | None = None
    interrupts: tuple[Interrupt, ...] = ()
    result: object = None
    cached: bool = False
    """The writes came from the node cache; the node was not called."""
    reported: bool = False
    """Its stream events (update, result) went out as it settled, before its step ended."""
    handled: BaseException | None = None
    """The error it failed with, handed to its error handler: the task counts as done, writing nothing."""
    recovery: Task | None = None
    """The error handler task that took over when this task failed."""
    source: Task | None = None
    """For an error handler task: the failed task it handles."""
    failure: object = None
    """For an error handler task: the :class:`~plait.errors.NodeError` the handler receives."""
    trace: Any = None
    """Its node's run, kept open for its routers' runs when the run is traced (:mod:`plait.pregel._traced`)."""

    def failed(self, exc: Exception, attempt: int, task_id: str = "") -> float | None:
        """Record that attempt ``attempt`` raised ``exc``; failed for good, ``exc`` gets a note naming
        the task (``task_id``: its id), as LangGraph's do.

        Returns:
            Seconds to wait before retrying, or ``None`` when the task is settled
            (interrupted, or failed for good: ``error`` is set).
        """
        if isinstance(exc, GraphInterrupt):
            self.interrupts = tuple(exc.interrupts)
            return None
        if isinstance(exc, GraphDrained):  # a subgraph drained: the task pauses, resuming continues it
            self.interrupts = (Interrupt(value=exc.reason, id=DRAINED),)
            return None
        if isinstance(exc, ParentCommand):  # bubbles up to the parent graph, never retried
            self.error = exc
            return None
        delay = retry_delay(self.node.retry, exc, attempt)
        if delay is None:
            self.error = exc
            note_task(exc, self.name, task_id)
            return None
        self.writes.clear()
        self.goto.clear()
        return delay


def note_task(exc: BaseException, name: str, task_id: str) -> None:
    """Add "During task with name ... and id ..." to ``exc``'s notes (shown under its traceback),
    once: an error passing through a subgraph's task and its parent's gets one note for each."""
    note = f"During task with name '{name}' and id '{task_id}'"
    if sys.version_info >= (3, 11) and note not in getattr(exc, "__notes__", ()):  # notes: Python 3.11+
        exc.add_note(note)


def _updates_of(value: Any) -> list[tuple[str, object]] | None:
    if isinstance(value, dict):
        return list(cast("dict[str, object]", value).items())  # isinstance() leaves keys and values Unknown
    kind = cast("type[object]", type(value))  # pyright reads type() of an Any value as type[Unknown]
    fields = getattr(kind, "model_fields", None)
    if fields is not None:  # a pydantic model instance: fields left at a None default are no update
        given: set[str] = getattr(value, "model_fields_set", set())
        return [
            (k, v)
            for k, info in cast("dict[str, Any]", fields).items()
            if (v := getattr(value, k)) is not None or k in given or info.default is not None
        ]
    slots = getattr(kind, "__dataclass_fields__", None)
    if slots is not None:
        return [(k, getattr(value, k)) for k in slots]
    return None


def _bad_return(name: str, value: Any) -> InvalidUpdateError:
    message = create_error_message(
        message=f"Expected dict, got {value}", error_code=ErrorCode.INVALID_GRAPH_NODE_RETURN_VALUE
    )
    err = InvalidUpdateError(message, node=name, value=value)
    add_note(
        err,
        f"Node {name!r} returned {type(value).__name__} {value!r}; a node must return a dict "
        "of state updates, a Command, or None. Route with add_conditional_edges instead.",
    )
    return err


def from_child(exc: ParentCommand) -> Command[Any]:
    """A subgraph's ``Command(graph=PARENT)`` as this graph's node result."""
    cmd = exc.command
    return Command(update=cmd.update, goto=cmd.goto, resume=cmd.resume)


def collect(task: Task, result: Any) -> None:
    """Record ``result`` as the task's writes and goto targets.

    Raises:
        InvalidUpdateError: the node returned something other than a dict,
            a state object, a ``Command`` or ``None``.
    """
    task.done = True
    task.result = result
    if type(result) is dict:
        task.writes.extend(
            cast("dict[str, object]", result).items()
        )  # narrowing leaves dict[Unknown, Unknown]
        return
    if result is None:
        return
    items: Sequence[Any] | None = (
        [result]
        if isinstance(result, Command)
        else cast("Sequence[object]", result)
        if isinstance(result, (list, tuple))
        else None
    )
    if items and (any(isinstance(i, Command) for i in items) or all(isinstance(i, Send) for i in items)):
        for item in cast("Sequence[object]", items):
            if isinstance(item, Send):
                task.goto.append(item)
                continue
            if not isinstance(item, Command):  # a plain update beside commands (LangGraph's mixed list)
                writes = _updates_of(item)
                if writes is None:
                    raise _bad_return(task.name, item)
                task.writes.extend(writes)
                continue
            command: Command[Any] = item  # pyright: ignore[reportUnknownVariableType]  # isinstance() leaves N Unknown
            if command.graph == Command.PARENT:
                raise ParentCommand(command, task.name)
            if command.update is not None:
                task.writes.extend(_command_updates(task.name, command.update))
            goto: Any = command.goto
            task.goto.extend(cast("Sequence[object]", goto) if isinstance(goto, (list, tuple)) else [goto])
        return
    writes = _updates_of(result)
    if writes is None:
        raise _bad_return(task.name, result)
    task.writes.extend(writes)


def _command_updates(name: str, update: Any) -> list[tuple[str, object]]:
    if isinstance(update, (list, tuple)):
        pairs = cast("Sequence[object]", update)  # isinstance() leaves the items Unknown
        if all(isinstance(w, tuple) and len(cast("tuple[object, ...]", w)) == 2 for w in pairs):
            return cast("list[tuple[str, object]]", list(pairs))
    writes = _updates_of(update)
    if writes is None:
        raise _bad_return(name, update)
    return writes
