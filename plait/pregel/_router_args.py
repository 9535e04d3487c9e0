"""What a router declaring ``store``, ``writer``, ``runtime`` (or ``config``) by keyword receives.

LangGraph runs a conditional edge's function as a ``RunnableCallable``, which passes these
to it; here :func:`bind` binds them to the router, for the routers the compiler found to
declare them (``Branch.extras``): the others are called as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any
from weakref import WeakKeyDictionary

from plait.pregel._callable import injected
from plait.pregel._context import TaskContext

__all__ = ["bind", "remember"]

_INPUTS: WeakKeyDictionary[Any, tuple[Any, Any]] = WeakKeyDictionary()
"""Each running loop's store and context, as its driver received them."""


def remember(loop: Any, store: Any, context: Any) -> None:
    """Keep the ``store`` and ``context`` a driver runs ``loop`` with, for its routers."""
    _INPUTS[loop] = (store, context)


def bind(
    path: Callable[..., Any], names: Sequence[str], loop: Any, task: Any, config: Mapping[str, Any]
) -> Callable[[Any], Any]:
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


def _with_extras(path: Callable[..., Any], extras: Mapping[str, Any], state: Any) -> Any:
    return path(state, **extras)
