"""What the run loop asks its driver to do: typed effects, executed synchronously or asynchronously.

:meth:`plait.pregel._loop.Loop.run` is a generator of effects. A driver sends
back what each effect produced (the routers' answers for :class:`CallRouters`,
``None`` otherwise) and throws an effect's error back into the generator, so
the loop decides what every outcome means, once, for both drivers.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from plait.pregel._task import Task

__all__ = [
    "CallRouters",
    "Effect",
    "Emit",
    "PutCheckpoint",
    "PutWrites",
    "RunTasks",
    "Save",
    "SaveOp",
    "put_kwargs",
]


@dataclass(frozen=True, slots=True)
class PutCheckpoint:
    """Store a checkpoint (``saver.put``).

    Attributes:
        config: The parent's config (thread, namespace, parent checkpoint id).
        checkpoint: The checkpoint to store.
        metadata: Its metadata (source, step, parents).
        versions: The keys the step changed, with their new versions.
        expected_head: The thread head this write builds on; ``...`` means "do not check" (a fork).
    """

    config: dict[str, Any]
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    versions: Mapping[str, int]
    expected_head: Any = ...


@dataclass(frozen=True, slots=True)
class PutWrites:
    """Store the writes of one task of a step that has not completed (``saver.put_writes``).

    Attributes:
        config: The config of the checkpoint the task's step follows.
        writes: ``(key, value)`` pairs.
        task_id: The task's id.
    """

    config: dict[str, Any]
    writes: Sequence[tuple[str, Any]]
    task_id: str


SaveOp = PutCheckpoint | PutWrites
"""One saver call."""


@dataclass(frozen=True, slots=True)
class Save:
    """Execute these saver calls, in order."""

    ops: tuple[SaveOp, ...]


@dataclass(frozen=True, slots=True)
class Emit:
    """Hand these ``(mode, payload)`` stream events to the caller."""

    events: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class RunTasks:
    """Run the tasks of a superstep; each records its result, error or interrupts on itself."""

    tasks: tuple[Task, ...]


@dataclass(frozen=True, slots=True)
class CallRouters:
    """Call the routing functions of conditional edges; send back their answers in order.

    Attributes:
        routers: ``router(state)`` callables, already bound to their config where they take one;
            each may return an awaitable (an async router), which the driver awaits.
        state: The state as routers receive it (one snapshot for all of them).
    """

    routers: tuple[Callable[[Any], Any], ...]
    state: Any


Effect = Save | Emit | RunTasks | CallRouters
"""Everything :meth:`~plait.pregel._loop.Loop.effects` yields."""


def put_kwargs(saver: Any, op: PutCheckpoint) -> dict[str, Any]:
    """``expected_head=`` for savers that check the thread head (user-written savers may not)."""
    if op.expected_head is ... or not getattr(saver, "supports_head_check", False):
        return {}
    if not takes_head(
        cast("type[object]", type(saver))
    ):  # a subclass overrode put()/aput() with LangGraph's signature
        return {}
    return {"expected_head": op.expected_head}


_TAKES_HEAD: dict[type, bool] = {}


def takes_head(kind: type) -> bool:
    """Whether both ``put`` and ``aput`` of a saver class accept ``expected_head`` (checked once)."""
    known = _TAKES_HEAD.get(kind)
    if known is None:
        known = _TAKES_HEAD[kind] = all(_accepts(getattr(kind, name, None)) for name in ("put", "aput"))
    return known


def _accepts(method: Any) -> bool:
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "expected_head" or p.kind is p.VAR_KEYWORD for p in params)
