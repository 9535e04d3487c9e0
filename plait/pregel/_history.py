"""Reading and rewriting a thread's past: snapshots and ``update_state``.

Pure functions over checkpoint tuples; :class:`~plait.pregel._pregel.Pregel`
does the (sync or async) saver calls around them.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, TypedDict, cast

from plait._internal._narrow import is_sequence
from plait._schema import MISSING
from plait.checkpoint._task_ids import current_writes
from plait.checkpoint.base import (
    ERROR,
    INTERRUPT,
    RESUME,
    Checkpoint,
    CheckpointTuple,
    new_checkpoint_id,
    now_iso,
)
from plait.constants import END, START
from plait.errors import InvalidUpdateError, SerializationError, StrictModeError
from plait.pregel._effects import CallRouters, takes_head
from plait.pregel._func_tasks import RETURN, merge_interrupts
from plait.pregel._loop import Loop
from plait.pregel._pause import NULL_TASK_ID
from plait.pregel._plan import Plan
from plait.pregel._recover import ERROR_SOURCE
from plait.pregel._run_state import RunState
from plait.pregel._settings import run_settings
from plait.pregel._step import routers, schedule, scheduled
from plait.pregel._stream import STATIC
from plait.pregel._task import Task, collect, task_key, task_path
from plait.pregel._thread import ThreadRef
from plait.pregel._writes import apply_writes, router_snapshot, router_views
from plait.types import Interrupt, PregelTask, StateSnapshot

__all__ = ["COPY", "empty_snapshot", "head_check", "prepare_update", "snapshot", "supersteps_of"]


class TaskInfo(TypedDict):
    """What a checkpoint's saved writes say of one task (``error``: its stored error write, as saved)."""

    writes: dict[str, object]
    interrupts: list[Interrupt]
    error: Any


def fold_calls(by_task: dict[str, TaskInfo], roots: Sequence[str]) -> list[Interrupt] | None:
    """For a snapshot: move the pending interrupts of task calls onto the node that made them.

    Args:
        by_task: ``{task id: {"writes": {...}, "interrupts": [...], ...}}`` of a checkpoint's saved writes.
        roots: The ids of the checkpoint's node tasks.

    Returns:
        The checkpoint's pending interrupts (answered calls that returned left out), or ``None``
        when no task call saved anything.
    """
    calls = [tid for tid in by_task if tid not in roots and any(tid.startswith(r + "/") for r in roots)]
    if not calls:
        return None
    pending: list[Interrupt] = []
    for tid, info in list(by_task.items()):
        if tid not in calls:
            pending.extend(info["interrupts"])
            continue
        if RETURN in info["writes"]:  # answered, then finished
            continue
        root = next(r for r in roots if tid.startswith(r + "/"))
        shown = by_task.setdefault(root, {"writes": {}, "interrupts": [], "error": None})
        shown["interrupts"] = list(merge_interrupts(shown["interrupts"], info["interrupts"]))
        pending.extend(info["interrupts"])
    return list(merge_interrupts(pending, ()))


def empty_snapshot(config: Mapping[str, object]) -> StateSnapshot:
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


def snapshot(plan: Plan, saved: CheckpointTuple, head: bool = False) -> StateSnapshot:
    """Turn a stored checkpoint into the :class:`StateSnapshot` users see.

    ``head``: the thread's newest checkpoint, read as "where the thread is now": tasks that finished
    after their interrupts were answered are no longer next, and only unanswered interrupts show.
    Read by its id, a checkpoint is the record of its step: every task and every question asked.
    """
    cp = saved.checkpoint
    values = cp.get("channel_values") or {}
    shown: dict[str, object] = {}
    for key, channel in plan.channels.items():
        value = values[key] if key in values else channel.initial()
        if value is not MISSING:
            shown[key] = value
    _check_kinds(plan, saved, values)
    interrupts: list[Interrupt] = []
    by_task: dict[str, TaskInfo] = {}
    written = current_writes(cp.get("id"), saved.pending_writes or ())
    for tid, key, value in written:
        info = by_task.setdefault(tid, {"writes": {}, "interrupts": [], "error": None})
        if key == INTERRUPT:
            known = {i.id for i in info["interrupts"]}
            asked = _interrupts(saved, tid, value)
            fresh = [i for i in asked if i.id not in known]  # a task asked again after a resume
            interrupts.extend(fresh)
            info["interrupts"].extend(fresh)
        elif key == ERROR:
            info["error"] = value
        elif key not in (RESUME, ERROR_SOURCE):
            info["writes"][key] = value
    nxt = tuple(cp.get("next") or ()) + tuple(s[0] for s in cp.get("sends") or ())
    if by_task:  # functional-API task calls: their pending interrupts show on their node
        roots = [task_key(cp.get("id"), name, index) for name, index in _task_keys(cp)]
        folded = fold_calls(by_task, roots)
        if folded is not None:
            interrupts = folded
        elif head:
            if nxt != (START,):
                interrupts, nxt = _now(cp, by_task, nxt)
            else:  # an input checkpoint's input is pending until a run applies it; a resume's update is not
                written = [w for w in written if w[0] == NULL_TASK_ID]
            shown = _with_written(plan, cp, shown, written)
    # a stored checkpoint always has an id (Checkpoint is total=False only for building one)
    pulls = len(cp.get("next") or ())
    tasks = tuple(  # a Send's task has its position among the sends in its path, as LangGraph's
        _task(cp["id"], (name, index), by_task, None if i < pulls else i - pulls, plan.channels)  # pyright: ignore[reportTypedDictNotRequiredAccess]
        for i, (name, index) in enumerate(_task_keys(cp))
    )
    return StateSnapshot(
        values=shown,
        next=nxt,
        config=saved.config,
        metadata=dict(saved.metadata),
        created_at=cp.get("ts"),
        parent_config=saved.parent_config,
        tasks=tasks,
        interrupts=tuple(i for i in interrupts if i.id not in STATIC),
    )


def _where(saved: CheckpointTuple, key: str) -> str:
    conf = saved.config.get("configurable", {})
    return f"thread {conf.get('thread_id')!r}, checkpoint {saved.checkpoint.get('id')}, key {key!r}"


def _interrupts(saved: CheckpointTuple, tid: str, value: object) -> list[Interrupt]:
    """A task's stored interrupt write: a list of ``Interrupt``; anything else is a damaged row."""
    kind = type(value).__name__
    if is_sequence(value):
        found = [i for i in value if isinstance(i, Interrupt)]
        if len(found) == len(value):
            return found
    raise SerializationError(
        f"Cannot read the interrupts of task {tid} ({_where(saved, INTERRUPT)}): the stored write is "
        f"{kind}, not a list of Interrupt (the row is damaged or was planted)",
        key=INTERRUPT,
    )


def _check_kinds(plan: Plan, saved: CheckpointTuple, values: Mapping[str, object]) -> None:
    """Refuse a stored value of a list key (a messages key…) that is not a list (cheap: one type check)."""
    for key, value in values.items():
        channel = plan.channels.get(key)
        if channel is None or value is None or isinstance(value, (list, tuple)):
            continue
        if isinstance(channel.initial(), list):
            raise SerializationError(
                f"Cannot read {_where(saved, key)}: the key holds a list, but the stored value is "
                f"{type(value).__name__} (the row is damaged or was planted)",
                key=key,
            )


def _now(
    cp: Checkpoint, by_task: dict[str, TaskInfo], nxt: tuple[str, ...]
) -> tuple[list[Interrupt], tuple[str, ...]]:
    """The head's pending interrupts and next nodes: answered questions and finished tasks drop out."""
    pending: list[Interrupt] = []
    finished: set[str] = set()
    for tid, info in by_task.items():
        if info["writes"] and not info["error"]:
            finished.add(tid)
            info["interrupts"] = []
        else:  # the task's latest questions (a saver keeps one interrupt write per task)
            pending.extend(info["interrupts"])
    if finished:
        keys = _task_keys(cp)
        nxt = tuple(name for name, index in keys if task_key(cp.get("id"), name, index) not in finished)
    return pending, nxt


def _with_written(
    plan: Plan, cp: Checkpoint, values: dict[str, object], pending: Sequence[tuple[str, str, object]]
) -> dict[str, object]:
    """``values`` with what the step's tasks wrote before it stopped (its pending writes), as the
    thread stands now; unchanged when they do not merge (the step reports that when it completes)."""
    names = {task_key(cp.get("id"), name, index): name for name, index in _task_keys(cp)}  # in step order
    writes: dict[str, list[tuple[str, object]]] = {}
    for tid, key, value in pending:
        if (tid in names or tid == NULL_TASK_ID) and key in plan.channels:  # state keys: no control writes
            writes.setdefault(tid, []).append((key, value))
    if not writes:
        return values
    view = RunState(values=dict(values), versions=dict(cp.get("channel_versions") or {}))
    try:
        if NULL_TASK_ID in writes:  # a resume's Command(update=...) first, as its own step (as LangGraph)
            apply_writes(plan, view, [(START, writes.pop(NULL_TASK_ID))])
        if writes:
            apply_writes(plan, view, [(name, writes[tid]) for tid, name in names.items() if tid in writes])
    except (InvalidUpdateError, StrictModeError):
        return values
    return {k: view.values[k] for k in plan.channels if k in view.values}


def _task_keys(cp: Checkpoint) -> list[tuple[str, int]]:
    """``(name, index)`` of each task the checkpoint schedules: its pulls, then its sends."""
    return scheduled(cp.get("next") or (), cp.get("sends") or ())


def _task(
    cid: str,
    key: tuple[str, int],
    by_task: dict[str, TaskInfo],
    push: int | None,
    keys: Mapping[str, object],
) -> PregelTask:
    """The ``key`` (name, index) task of the step after checkpoint ``cid``; its ``result``: what it wrote
    to the state's ``keys`` (``{}``: nothing), once it finished."""
    name, index = key
    tid = task_key(cid, name, index)
    info = by_task.get(tid)
    # finished: its writes are stored (after answered questions, too), or it stopped on nothing
    done = info is not None and not info["error"] and (bool(info["writes"]) or not info["interrupts"])
    return PregelTask(
        id=tid,
        name=name,
        path=task_path(name, push),
        error=None if info is None else info["error"],
        # a subgraph's breakpoint pauses the task, but asks nothing
        interrupts=() if info is None else tuple(i for i in info["interrupts"] if i.id not in STATIC),
        result={k: v for k, v in info["writes"].items() if k in keys} if info is not None and done else None,
    )


Update = tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, int]]
"""What ``put`` needs for an update: ``(parent_config, checkpoint, metadata, new_versions)``."""


def prepare_update(
    plan: Plan, thread: ThreadRef, saved: CheckpointTuple | None, updates: Sequence[tuple[object, str | None]]
) -> Generator[CallRouters, list[Any], Update]:
    """Apply one superstep of updates ``(values, as_node)`` as if those nodes had returned them.

    A generator like the run loop: it yields the conditional edges the writers trigger
    (:class:`~plait.pregel._effects.CallRouters`) for the driver to call; returns what ``put`` needs.
    ``as_node="__copy__"`` (alone, no values) copies the checkpoint as a sibling (a fork).

    Raises:
        InvalidUpdateError: an ``as_node`` is not a node of the graph, or a copy is misused.
    """
    if any(node == COPY for _, node in updates):
        return _copy(saved, updates)
    for _, as_node in updates:
        if as_node is not None and as_node not in plan.nodes and as_node not in (START, END):
            raise InvalidUpdateError(
                f"Node {as_node!r} does not exist; known nodes: {sorted(plan.nodes)}", node=as_node
            )
    if saved is None:  # a new thread: an update is its input, and the graph starts from it
        updates = [(values, START if as_node is None else as_node) for values, as_node in updates]
    loop = Loop(run_settings(plan, None, {}, frozenset()))
    loop.load(saved)
    run: RunState = loop.run
    tasks: list[Task] = []
    for values, as_node in updates:
        task = Task(as_node or "__update__", None, None)  # type: ignore[arg-type]
        if values is not None:
            collect(task, values)
        tasks.append(task)
    routed = [t for t, (_, node) in zip(tasks, updates, strict=True) if node is not None and node != END]
    before = router_snapshot(plan, routed, tasks, run.values) if len(tasks) > 1 else None
    changed = apply_writes(plan, run, [(t.name, t.writes) for t in tasks])
    if routed:
        if any(t.name == START for t in routed):
            run.barriers.clear()
        views = None if before is None else router_views(plan, routed, before)  # each its own update's
        calls = routers(plan, routed, {}, run.values, (run.step, run.step + 2), views)
        answers = (yield CallRouters(calls, loop.branch_input())) if calls else ()
        schedule(plan, run, routed, answers)
    elif any(node == END for _, node in updates):
        run.next, run.sends = [], []
    # a stored checkpoint always has an id (Checkpoint is total=False only for building one)
    after = None if saved is None else saved.checkpoint["id"]  # pyright: ignore[reportTypedDictNotRequiredAccess]
    checkpoint, versions = run.checkpoint(new_checkpoint_id(after=after), changed)
    step = int((saved.metadata or {}).get("step", -2)) + 1 if saved is not None else 0
    parents = dict((saved.metadata or {}).get("parents") or {}) if saved is not None else {}
    metadata: dict[str, object] = {"source": "update", "step": step, "parents": parents}
    parent = saved.config if saved is not None else thread.config()
    return parent, checkpoint, metadata, versions


COPY = "__copy__"
"""``as_node`` that copies a checkpoint as a new sibling of it (LangGraph's name)."""


def _copy(saved: CheckpointTuple | None, updates: Sequence[tuple[object, str | None]]) -> Update:
    if saved is None or len(updates) != 1 or updates[0][0] is not None:
        raise InvalidUpdateError(
            "as_node='__copy__' copies an existing checkpoint: pass values=None, alone in its superstep",
            node=COPY,
        )
    checkpoint: dict[str, object] = dict(saved.checkpoint)
    # a new checkpoint: its own id and time (listing and pruning by time see the fork as new)
    checkpoint["id"] = new_checkpoint_id(after=saved.checkpoint.get("id"))
    checkpoint["ts"] = now_iso()
    step = int((saved.metadata or {}).get("step", -1)) + 1
    metadata: dict[str, object] = {"source": "fork", "step": step, "parents": {}}
    # every key counts as written: the copy's parent is the copied checkpoint's parent, not itself
    versions = dict(saved.checkpoint.get("channel_versions") or {})
    if saved.parent_config is not None:
        return saved.parent_config, checkpoint, metadata, versions
    root = {k: v for k, v in saved.config.get("configurable", {}).items() if k != "checkpoint_id"}
    return {**saved.config, "configurable": root}, checkpoint, metadata, versions  # a copy of a root is one


def head_check(saver: Any, ref: ThreadRef, saved: CheckpointTuple | None) -> dict[str, object]:
    """``expected_head`` for an update written on the thread head (none for explicit forks, nor for a
    saver subclass whose ``put``/``aput`` override does not take it)."""
    if (
        not saver.supports_head_check
        or ref.checkpoint_id is not None
        or not takes_head(cast("type[object]", type(saver)))
    ):
        return {}
    return {"expected_head": None if saved is None else saved.checkpoint.get("id")}


def supersteps_of(supersteps: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
    """Check ``bulk_update_state``'s argument: at least one superstep, each with an update."""
    steps = list(supersteps)
    if not steps:
        raise ValueError("No supersteps provided")
    if any(not updates for updates in steps):
        raise ValueError("No updates provided")
    return steps
