"""Reading and rewriting a thread's past: snapshots and ``update_state``.

Pure functions over checkpoint tuples; :class:`~plait.pregel._pregel.Pregel`
does the (sync or async) saver calls around them.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from plait._schema import MISSING
from plait.checkpoint.base import ERROR, INTERRUPT, RESUME, CheckpointTuple, new_checkpoint_id
from plait.constants import END, START
from plait.errors import InvalidUpdateError
from plait.pregel._effects import CallRouters
from plait.pregel._loop import Loop
from plait.pregel._plan import Plan
from plait.pregel._step import RunState, apply_writes, routers, schedule
from plait.pregel._task import Task, collect
from plait.pregel._thread import ThreadRef
from plait.types import Interrupt, PregelTask, StateSnapshot

__all__ = ["empty_snapshot", "prepare_update", "snapshot"]


def empty_snapshot(config: Mapping[str, Any]) -> StateSnapshot:
    """The snapshot of a thread that has no checkpoint yet."""
    return StateSnapshot(
        values={},
        next=(),
        config=dict(config),
        metadata=None,
        created_at=None,
        parent_config=None,
        tasks=(),
        interrupts=(),
    )


def snapshot(plan: Plan, saved: CheckpointTuple) -> StateSnapshot:
    """Turn a stored checkpoint into the :class:`StateSnapshot` users see."""
    cp = saved.checkpoint
    values = cp.get("channel_values") or {}
    shown = {}
    for key, channel in plan.channels.items():
        value = values[key] if key in values else channel.initial()
        if value is not MISSING:
            shown[key] = value
    interrupts: list[Interrupt] = []
    by_task: dict[str, dict[str, Any]] = {}
    for tid, key, value in saved.pending_writes or ():
        info = by_task.setdefault(tid, {"writes": {}, "interrupts": [], "error": None})
        if key == INTERRUPT:
            interrupts.extend(value)
            info["interrupts"].extend(value)
        elif key == ERROR:
            info["error"] = value
        elif key != RESUME:
            info["writes"][key] = value
    nxt = tuple(cp.get("next") or ()) + tuple(s[0] for s in cp.get("sends") or ())
    # a stored checkpoint always has an id (Checkpoint is total=False only for building one)
    tasks = tuple(_task(cp["id"], name, index, by_task) for name, index in _task_keys(cp))  # pyright: ignore[reportTypedDictNotRequiredAccess]
    return StateSnapshot(
        values=shown,
        next=nxt,
        config=saved.config,
        metadata=dict(saved.metadata),
        created_at=cp.get("ts"),
        parent_config=saved.parent_config,
        tasks=tasks,
        interrupts=tuple(interrupts),
    )


def _task_keys(cp: Any) -> list[tuple[str, int]]:
    keys = [(name, 0) for name in cp.get("next") or ()]
    counts: dict[str, int] = {}
    for name, _ in cp.get("sends") or ():
        counts[name] = counts.get(name, -1) + 1
        keys.append((name, counts[name]))
    return keys


def _task(cid: str, name: str, index: int, by_task: dict[str, dict[str, Any]]) -> PregelTask:
    tid = f"{cid}:{name}:{index}"
    info = by_task.get(tid, {})
    done = not info.get("error") and not info.get("interrupts") and tid in by_task
    return PregelTask(
        id=tid,
        name=name,
        path=("__pregel_pull", name),
        error=info.get("error"),
        interrupts=tuple(info.get("interrupts", ())),
        result=info["writes"] if done else None,
    )


Update = tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, int]]
"""What ``put`` needs for an update: ``(parent_config, checkpoint, metadata, new_versions)``."""


def prepare_update(
    plan: Plan, thread: ThreadRef, saved: CheckpointTuple | None, values: Any, as_node: str | None
) -> Generator[CallRouters, list[Any], Update]:
    """Apply ``values`` as if written by ``as_node``; return what ``put`` needs.

    A generator like the run loop: it yields the conditional edges ``as_node``
    triggers (:class:`~plait.pregel._effects.CallRouters`) for the driver to call.

    Raises:
        InvalidUpdateError: ``as_node`` is not a node of the graph.
    """
    if as_node is not None and as_node not in plan.nodes and as_node not in (START, END):
        raise InvalidUpdateError(
            f"Node {as_node!r} does not exist; known nodes: {sorted(plan.nodes)}", node=as_node
        )
    if saved is None and as_node is None:
        as_node = START  # a new thread: the update is its input, and the graph starts from it
    loop = Loop(plan, None, {}, frozenset())
    loop.load(saved)
    run: RunState = loop.run
    writer = as_node or "__update__"
    task = Task(writer, None, None)  # type: ignore[arg-type]
    if values is not None:
        collect(task, values)
    changed = apply_writes(plan, run, [(writer, task.writes)])
    if as_node is not None and as_node != END:
        if as_node == START:
            run.barriers.clear()
        calls = routers(plan, [task], {})
        answers = (yield CallRouters(calls, loop.branch_input())) if calls else ()
        schedule(plan, run, [task], answers)
    elif as_node == END:
        run.next, run.sends = [], []
    # a stored checkpoint always has an id (Checkpoint is total=False only for building one)
    after = None if saved is None else saved.checkpoint["id"]  # pyright: ignore[reportTypedDictNotRequiredAccess]
    checkpoint, versions = run.checkpoint(new_checkpoint_id(after=after), changed)
    step = int((saved.metadata or {}).get("step", -2)) + 1 if saved is not None else 0
    metadata: dict[str, Any] = {"source": "update", "step": step, "parents": {}}
    parent = saved.config if saved is not None else thread.config()
    return parent, checkpoint, metadata, versions
