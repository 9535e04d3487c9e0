"""What a router declaring ``store``, ``writer``, ``runtime`` (or ``config``) by keyword receives.

LangGraph runs a conditional edge's function as a ``RunnableCallable``, which passes these
to it; here :func:`bind` binds them to the router, for the routers the compiler found to
declare them (``Branch.extras``): the others are called as they are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from inspect import isawaitable
from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

from plait._context import TASK_CONTEXT, PendingTask
from plait.pregel._callable import injected
from plait.pregel._context import TaskContext

__all__ = ["RouterTask", "bind", "in_task", "remember"]

if TYPE_CHECKING:
    from plait.pregel._task import Task


class _Run(Protocol):
    """What binding a router reads of its run (a ``Loop``)."""

    def task_id(self, task: Task) -> str: ...


_INPUTS: WeakKeyDictionary[object, tuple[object, object]] = WeakKeyDictionary()
"""Each running loop's store and context, as its driver received them."""


def remember(loop: object, store: object, context: object) -> None:
    """Keep the ``store`` and ``context`` a driver runs ``loop`` with, for its routers."""
    _INPUTS[loop] = (store, context)


def bind(
    path: Callable[..., object],
    names: Sequence[str],
    loop: _Run | None,
    task: Task,
    config: Mapping[str, object],
) -> Callable[[object], object]:
    """``path`` as a function of the state, given ``names`` of what the task it routes from had:
    the run's store, its ``custom`` stream writer, its runtime, and ``config``.

    Args:
        path: The router.
        names: The parameters it declared (``Branch.extras``).
        loop: The run (``None``: a state update outside a run, without store or stream).
        task: The task it routes from (the ``START`` pseudo-task included).
        config: The config it receives.
    """
    store, context = _INPUTS.get(loop, (None, None)) if loop is not None else (None, None)
    ctx = TaskContext(
        dict(config), store, context, loop, task.name, "" if loop is None else loop.task_id(task)
    )
    return partial(_with_extras, path, injected(names, ctx))  # (no task: its config is ``config``)


def _with_extras(path: Callable[..., object], extras: Mapping[str, object], state: object) -> object:
    return path(state, **extras)


class RouterTask(PendingTask):
    """The task context a router runs in: its task's (``get_config()`` gives the task's config, as
    LangGraph's routers see it), made only if the router asks for it."""

    __slots__ = ("config", "ctx", "loop", "task")

    def __init__(self, loop: _Run, task: Task, config: Mapping[str, object]) -> None:
        self.loop, self.task, self.config = loop, task, config
        self.ctx: TaskContext | None = None

    def resolve(self) -> TaskContext:
        """The context, made on the first call."""
        if self.ctx is None:
            store, context = _INPUTS.get(self.loop, (None, None))
            self.ctx = TaskContext(
                dict(self.config),
                store,
                context,
                self.loop,
                self.task.name,
                self.loop.task_id(self.task),
                task=self.task,
            )
        return self.ctx


def in_task(pending: PendingTask, path: Callable[[object], object], state: object) -> object:
    """``path(state)`` with ``pending`` as the running task (an async router's coroutine too)."""
    token = TASK_CONTEXT.set(pending)
    try:
        answer = path(state)
    finally:
        TASK_CONTEXT.reset(token)
    return _awaited(pending, answer) if isawaitable(answer) else answer


async def _awaited(pending: PendingTask, answer: Awaitable[object]) -> object:
    token = TASK_CONTEXT.set(pending)
    try:
        return await answer
    finally:
        TASK_CONTEXT.reset(token)
