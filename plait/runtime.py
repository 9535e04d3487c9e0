"""The ``runtime`` object nodes can ask for: run context, store and stream writer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from plait._context import current_task

__all__ = ["Runtime", "get_runtime"]

C = TypeVar("C")


def _drop(_: Any) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Runtime(Generic[C]):
    """What a node receives as its ``runtime`` keyword argument.

    Attributes:
        context: The ``context`` passed to invoke/stream (see ``context_schema``).
        store: The long-term store given to ``compile()``, or ``None``.
        stream_writer: Emits ``custom`` stream events.
        previous: Reserved (functional API); always ``None`` here.
    """

    context: C | None = None
    store: Any = None
    stream_writer: Callable[[Any], None] = _drop
    previous: Any = None


def get_runtime(context_schema: type[C] | None = None) -> Runtime[C]:
    """The runtime of the node running in this thread or coroutine.

    Raises:
        RuntimeError: called outside a running node.
    """
    task = current_task()
    return Runtime(context=task.context, store=task.store, stream_writer=task.writer)
