"""``update_state`` / ``bulk_update_state``: write supersteps of updates to a thread, one checkpoint each.

Besides node updates (see :func:`~plait.pregel._history.prepare_update`), a superstep may be
the graph input (``as_node="__input__"``): it is stored as the run's input checkpoint would
be (``source="input"``, ``next=("__start__",)``, the input kept as the ``__start__`` task's
pending writes), so that ``invoke(None, config)`` starts the graph from it.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from plait.checkpoint.base import CheckpointMetadata, CheckpointTuple, config_metadata, new_checkpoint_id
from plait.constants import END, START
from plait.errors import InvalidUpdateError
from plait.pregel._arun import acall_routers
from plait.pregel._channel_graph import channel_updates
from plait.pregel._effects import CallRouters
from plait.pregel._history import COPY, head_check, prepare_update
from plait.pregel._input import check_storable, input_writes
from plait.pregel._loop import Loop
from plait.pregel._plan import Plan
from plait.pregel._root import root_value
from plait.pregel._run import call_routers
from plait.pregel._settings import run_settings
from plait.pregel._step import scheduled
from plait.pregel._task import Task, collect, task_key
from plait.pregel._thread import ThreadRef, found
from plait.pregel._travel import with_map


class _Graph(Protocol):
    """What an update needs of its graph: its plan and its saver."""

    @property
    def plan(self) -> Plan: ...

    @property
    def checkpointer(self) -> object: ...


__all__ = ["INPUT", "aupdate_thread", "check_superstep", "update_thread"]

INPUT = "__input__"
"""``as_node`` that writes the values as the graph input (LangGraph's name)."""

Updates = list[tuple[object, str | None]]
_Prepared = tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, int]]


def check_superstep(plan: Plan, updates: Sequence[Sequence[Any]]) -> Updates:
    """The superstep's ``(values, as_node)`` pairs, checked.

    Raises:
        InvalidUpdateError: several updates in one superstep without an ``as_node`` each,
            or with ``__end__``, ``__copy__`` or ``__input__`` (those stand alone).
    """
    pairs: Updates = [
        (root_value(u[0]) if plan.root else u[0], u[1] if len(u) > 1 else None) for u in updates
    ]
    if len(pairs) > 1:
        for _, as_node in pairs:
            if as_node is None:
                raise InvalidUpdateError(
                    "as_node is required for every update of a superstep with several updates"
                )
            if as_node in (END, COPY, INPUT):
                raise InvalidUpdateError(f"as_node={as_node!r} must be the only update of its superstep")
    return pairs


def _prepare_input(
    plan: Plan, ref: ThreadRef, saved: CheckpointTuple | None, values: object
) -> tuple[_Prepared, list[tuple[str, object]]]:
    """The input checkpoint (state unchanged, ``__start__`` next) and the input as its pending writes."""
    if values is None:
        raise InvalidUpdateError(f"Received no input writes for {list(plan.input_keys)}", node=INPUT)
    writes = input_writes(plan, values, INPUT)
    loop = Loop(run_settings(plan, None, {}, frozenset()))
    loop.load(saved)
    run = loop.run
    run.next, run.sends = [START], []
    after = None if saved is None else saved.checkpoint.get("id")
    checkpoint, versions = run.checkpoint(new_checkpoint_id(after=after), set())
    step = int((saved.metadata or {}).get("step", -2)) + 1 if saved is not None else -1
    parents = dict((saved.metadata or {}).get("parents") or {}) if saved is not None else {}
    metadata: dict[str, object] = {"source": "input", "step": step, "parents": parents}
    parent = saved.config if saved is not None else ref.config()
    return (parent, checkpoint, metadata, versions), writes


def _task_results(
    saved: CheckpointTuple | None, pairs: Updates, updates: Sequence[Sequence[Any]]
) -> list[tuple[str, list[tuple[str, object]]]]:
    """The writes of each update made as a node that ``saved`` schedules, by that task's id: stored
    as the task's pending writes, they are its result in the history (as if it had run)."""
    if saved is None:
        return []
    cp = saved.checkpoint
    cid = cp.get("id")
    free: dict[str, list[str]] = {}
    for name, index in scheduled(cp.get("next") or (), cp.get("sends") or ()):
        free.setdefault(name, []).append(task_key(cid, name, index))
    out: list[tuple[str, list[tuple[str, object]]]] = []
    for (values, as_node), update in zip(pairs, updates, strict=True):
        ids = free.get(as_node or "")
        given = update[2] if len(update) > 2 else None
        if not ids or values is None:
            continue
        tid = given if given in ids else ids[0]
        ids.remove(tid)
        task = Task(as_node or "", None, None)  # type: ignore[arg-type]
        collect(task, values)
        if task.writes:
            out.append((tid, list(task.writes)))
    return out


def _start_task(config: Mapping[str, Any]) -> str:
    """Id of the ``__start__`` task of the step after the checkpoint ``config`` names."""
    return task_key(config["configurable"]["checkpoint_id"], START, 0)


@dataclass(frozen=True, slots=True)
class _SaverCall:
    """A checkpointer call an update makes (the async driver calls its ``a``-prefixed twin)."""

    method: str
    args: tuple[object, ...]
    kwargs: dict[str, object] = field(default_factory=lambda: {})

    @property
    def amethod(self) -> str:
        """The async form of :attr:`method` (``aget_tuple``...)."""
        return "a" + self.method


def _update_ops(
    graph: _Graph, config: Mapping[str, object], supersteps: Sequence[Sequence[Sequence[Any]]]
) -> Generator[_SaverCall | CallRouters, Any, dict[str, Any]]:
    """The saver calls (and router calls) of :func:`update_thread`; the drivers make them
    (what each call answered is sent back in)."""
    saver = graph.checkpointer
    current: dict[str, Any] = dict(config)
    recorded = config_metadata(current)  # the user's keys, as the run's checkpoints record them
    metadata: dict[str, Any] = {}
    inferring = not graph.plan.triggers  # a state graph; a channel graph infers from its writers
    for updates in supersteps:
        pairs = check_superstep(graph.plan, updates)
        ref = ThreadRef.from_config(current)
        saved = found((yield _SaverCall("get_tuple", (ref.config(),))), ref)
        last = START if saved is None else ""  # the node that ran last as of saved (see RAN)
        if saved is not None and inferring:
            unnamed = pairs[0][1] is None  # the update is made as that node: it must be known
            last = yield from _last_ran(saved, strict=unnamed)
            pairs = [(pairs[0][0], last)] if unnamed else pairs
        if pairs[0][1] == INPUT:
            (parent, checkpoint, metadata, versions), writes = _prepare_input(
                graph.plan, ref, saved, pairs[0][0]
            )
            checkpoint[RAN] = last
            # before the put: never the input checkpoint without its input
            check_storable(saver, writes, metadata["step"])
            put = (parent, checkpoint, {**recorded, **metadata}, versions)
            current = yield _SaverCall("put", put, head_check(saver, ref, saved))
            yield _SaverCall("put_writes", (current, writes, _start_task(current)))
            continue
        pairs = channel_updates(graph.plan, pairs, saved)
        parent, checkpoint, metadata, versions = yield from prepare_update(graph.plan, ref, saved, pairs)
        checkpoint[RAN] = last  # an update runs no node: the last one that ran stays the same
        if pairs[0][1] != COPY:  # a copy keeps its original's metadata (LangGraph)
            metadata = {**recorded, **metadata}
        current = yield _SaverCall(
            "put", (parent, checkpoint, metadata, versions), head_check(saver, ref, saved)
        )
        for tid, writes in _task_results(saved, pairs, updates):
            yield _SaverCall("put_writes", (parent, writes, tid))
    return with_map(current, metadata)


RAN = "ran"
"""Key of an update's (or a copy's) checkpoint: the node that ran last before it, ``""`` when that
is ambiguous. A later update without ``as_node`` reads it instead of walking back the history."""


def _last_ran(saved: CheckpointTuple, *, strict: bool) -> Generator[_SaverCall, Any, str]:
    """The node an update without ``as_node`` is made as: the one that ran last (LangGraph's rule).

    That is the node the state's edges started in the step that wrote the latest ``loop``
    checkpoint (its parent's ``next``; a step that ran only ``Send`` tasks is skipped, as
    LangGraph does), or the graph's start when none ran yet. An update or copy records the answer
    (:data:`RAN`), so the walk back stops there; inputs and the loop's replay forks run no node.
    ``strict=False`` answers ``""`` where ``strict`` raises.

    Raises:
        InvalidUpdateError: several nodes ran in that step, or the steps between that checkpoint
            and its parent were not stored (``durability="exit"``), or were pruned: ``as_node``
            must be given.
    """
    current = saved
    why = ""
    while not why:
        cp: Mapping[str, object] = current.checkpoint
        meta = current.metadata or CheckpointMetadata()
        above = current.parent_config
        if RAN in cp:
            if cp[RAN] or not strict:
                return str(cp[RAN])
            why = "the node that ran last was already ambiguous"
            break
        parent: CheckpointTuple | None = None if above is None else (yield _SaverCall("get_tuple", (above,)))
        if meta.get("source") != "loop":  # an input, an update, the loop's replay fork: no node ran
            if above is None:
                return START
            if parent is None:
                why = "its older checkpoints were pruned"
                break
            current = parent
            continue
        if parent is None:
            why = "its last step is not stored" if above is None else "its older checkpoints were pruned"
            break
        ran: set[str] = set(parent.checkpoint.get("next") or ())
        above_meta = parent.metadata or CheckpointMetadata()
        gap = int(meta.get("step", 0)) - int(above_meta.get("step", -1))
        if len(ran) == 1 and gap == 1:
            return ran.pop()
        if not ran and gap == 1:  # only Send tasks ran: the node before them
            current = parent
            continue
        why = "several nodes ran in its last step" if len(ran) > 1 else "its last step is not stored"
    if not strict:
        return ""
    raise InvalidUpdateError(
        f"Ambiguous update, specify as_node: {why}, so the node that ran last is unknown"
    )


# >>> async source
async def aupdate_thread(
    graph: _Graph, config: Mapping[str, object], supersteps: Sequence[Sequence[Sequence[Any]]]
) -> dict[str, Any]:
    """Apply ``supersteps`` to the thread ``config`` names with ``graph``'s nodes and channels."""
    saver = graph.checkpointer
    ops = _update_ops(graph, config, supersteps)
    answer: object = None
    while True:
        try:
            op = ops.send(answer)
        except StopIteration as done:
            config_out: dict[str, Any] = done.value
            return config_out
        if isinstance(op, _SaverCall):
            answer = await getattr(saver, op.amethod)(*op.args, **op.kwargs)
        else:
            answer = await acall_routers(op)


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def update_thread(
    graph: _Graph, config: Mapping[str, object], supersteps: Sequence[Sequence[Sequence[Any]]]
) -> dict[str, Any]:
    """Apply ``supersteps`` to the thread ``config`` names with ``graph``'s nodes and channels."""
    saver = graph.checkpointer
    ops = _update_ops(graph, config, supersteps)
    answer: object = None
    while True:
        try:
            op = ops.send(answer)
        except StopIteration as done:
            config_out: dict[str, Any] = done.value
            return config_out
        if isinstance(op, _SaverCall):
            answer = getattr(saver, op.method)(*op.args, **op.kwargs)
        else:
            answer = call_routers(op)


# <<< generated sync
