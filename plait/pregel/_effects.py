"""What the run loop asks its driver to do: typed effects, executed synchronously or asynchronously.

:meth:`plait.pregel._loop.Loop.run` is a generator of effects. A driver sends
back what each effect produced (the routers' answers for :class:`CallRouters`,
``None`` otherwise) and throws an effect's error back into the generator, so
the loop decides what every outcome means, once, for both drivers.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from plait.checkpoint._calls import PutCheckpoint, PutWrites, SaveOp
from plait.constants import START
from plait.errors import SerializationError
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
    "asave",
    "blame",
    "put_kwargs",
    "save",
]


# The effects are not frozen: they are made every step, and a frozen __init__ costs twice as much.


@dataclass(slots=True)
class Save:
    """Execute these saver calls, in order.

    ``last``: the run's final save; a saver holding the thread's lease may release it in the same
    transaction (see :meth:`plait.checkpoint._engine.SqlSaverBase._save_many`).
    """

    ops: tuple[SaveOp, ...]
    last: bool = False


@dataclass(slots=True)
class Emit:
    """Hand these ``(mode, payload)`` stream events to the caller."""

    events: tuple[tuple[str, object], ...]


@dataclass(slots=True)
class RunTasks:
    """Run the tasks of a superstep; each records its result, error or interrupts on itself."""

    tasks: tuple[Task, ...]


@dataclass(slots=True)
class CallRouters:
    """Call the routing functions of conditional edges; send back their answers in order.

    Attributes:
        routers: ``router(state)`` callables, already bound to their config where they take one;
            each may return an awaitable (an async router), which the driver awaits.
        state: The state as routers receive it (one snapshot for all of them).
    """

    routers: tuple[Callable[[object], object], ...]
    state: object


Effect = Save | Emit | RunTasks | CallRouters
"""Everything :meth:`~plait.pregel._loop.Loop.effects` yields."""


# >>> async source
async def asave(saver: Any, effect: Save, thread: tuple[str, str] | None, before: object = None) -> None:
    """Make the saver calls of ``effect``; plait's SQL savers batch them (``_save_many``).

    ``thread``: the ``(thread_id, checkpoint_ns)`` whose lease the run holds, released with the
    run's last save where the saver can. Looked up on the class: a wrapper forwarding attributes
    to another saver has its own ``put`` called. ``before``: calls the saver held back, sent first
    (its ``Held``, see :mod:`plait.pregel._held`).
    """
    many = getattr(cast("type[object]", type(saver)), "_asave_many", None)
    release = thread if effect.last else None
    if before is not None:
        if many is None or not await many(saver, effect.ops, release, before):
            raise RuntimeError(f"{type(saver).__name__} held saves back but cannot send them")
        return
    if many is not None and await many(saver, effect.ops, release):
        return
    for op in effect.ops:
        if isinstance(op, PutCheckpoint):
            await saver.aput(op.config, op.checkpoint, op.metadata, op.versions, **put_kwargs(saver, op))
        else:
            await saver.aput_writes(op.config, op.writes, op.task_id)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def save(saver: Any, effect: Save, thread: tuple[str, str] | None, before: object = None) -> None:
    """Make the saver calls of ``effect``; plait's SQL savers batch them (``_save_many``).

    ``thread``: the ``(thread_id, checkpoint_ns)`` whose lease the run holds, released with the
    run's last save where the saver can. Looked up on the class: a wrapper forwarding attributes
    to another saver has its own ``put`` called. ``before``: calls the saver held back, sent first
    (its ``Held``, see :mod:`plait.pregel._held`).
    """
    many = getattr(cast("type[object]", type(saver)), "_save_many", None)
    release = thread if effect.last else None
    if before is not None:
        if many is None or not many(saver, effect.ops, release, before):
            raise RuntimeError(f"{type(saver).__name__} held saves back but cannot send them")
        return
    if many is not None and many(saver, effect.ops, release):
        return
    for op in effect.ops:
        if isinstance(op, PutCheckpoint):
            saver.put(op.config, op.checkpoint, op.metadata, op.versions, **put_kwargs(saver, op))
        else:
            saver.put_writes(op.config, op.writes, op.task_id)


# <<< generated sync


def put_kwargs(saver: Any, op: PutCheckpoint) -> dict[str, object]:
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


def blame(err: SerializationError, tasks: Sequence[Task], step: int) -> SerializationError:
    """Name the writer (one of ``tasks``, of step ``step``, or the graph input) of the key a
    serialization error is about."""
    if err.key is not None and err.node is None:
        writers = [t.name for t in tasks if any(k == err.key for k, _ in t.writes)]
        err.node = writers[0] if writers else START
        err.args = (
            f"{err.args[0] if err.args else err} (written by "
            f"{'the graph input' if err.node == START else f'node {err.node!r}'} at step {step})",
        )
    return err
