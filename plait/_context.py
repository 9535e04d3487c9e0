"""Which task is running in this thread or coroutine: the context variable and its lookup.

The runtime (:mod:`plait.pregel`) sets :data:`TASK_CONTEXT` around each node it
runs; the accessors a node may call (``interrupt()``, ``get_config()``,
``get_store()``, ``get_stream_writer()``, ``get_runtime()``) read it through
:func:`current_task`. The variable lives here, below both, so that
:mod:`plait.types`, :mod:`plait.config` and :mod:`plait.runtime` never import
the runtime (see ``tests/test_import_graph.py``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["TASK_CONTEXT", "PendingTask", "RunningTask", "current_task", "running_task"]


class RunningTask(Protocol):
    """What the accessors read of the running task (the runtime's ``TaskContext`` provides it)."""

    @property
    def config(self) -> dict[str, Any]:
        """The run config (``configurable`` included)."""
        ...

    @property
    def node_config(self) -> dict[str, Any]:
        """The config the node receives: the run's, with the task's keys in its ``metadata``."""
        ...

    @property
    def store(self) -> object:
        """The long-term store given to ``compile()``, if any."""
        ...

    @property
    def writer(self) -> Callable[[object], None]:
        """Emits ``custom`` stream events."""
        ...

    @property
    def context(self) -> Any:  # the caller names its type (get_runtime(ContextSchema))
        """The run's ``context`` object (``context_schema``)."""
        ...

    def interrupt(self, value: object, *, response_schema: object = None) -> object:
        """Return the resume value for this call, or stop the node with an ``Interrupt``."""
        ...


class PendingTask:
    """A task context made only when the node asks for it (the runtime's fast path sets one, so
    that a node that never calls ``get_config()``, ``interrupt()``… costs no context)."""

    __slots__ = ()

    def resolve(self) -> RunningTask:
        """The task context, made on the first call."""
        raise NotImplementedError


TASK_CONTEXT: contextvars.ContextVar[RunningTask | PendingTask | None] = contextvars.ContextVar(
    "plait_task", default=None
)
"""The context of the node running in this thread or coroutine (``None`` outside a run)."""


def running_task() -> RunningTask | None:
    """The context of the node running here, or ``None`` outside a run."""
    task = TASK_CONTEXT.get()
    return task.resolve() if isinstance(task, PendingTask) else task


def current_task() -> RunningTask:
    """The context of the node running in this thread or coroutine.

    Raises:
        RuntimeError: called outside a running graph node.
    """
    task = running_task()
    if task is None:
        raise RuntimeError("Called outside of a running graph node (get_config/get_store/interrupt need one)")
    return task
