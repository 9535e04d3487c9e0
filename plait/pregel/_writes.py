"""How a step's writes merge into the run's values: key by key, through each key's channel.

Writes are merged in the order the tasks were scheduled (nodes by name, then ``Send`` tasks in
the order they were sent), never in the order they finished; each key written gets a new version.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from plait._schema import MISSING
from plait.channels.last_value import LastValue
from plait.constants import START
from plait.errors import InvalidUpdateError, StrictModeError, UndeclaredKeyWarning
from plait.pregel._managed import clear_unwritten
from plait.pregel._plan import Plan
from plait.pregel._run_state import RunState, next_version
from plait.types import Overwrite

if TYPE_CHECKING:
    from plait.pregel._task import Task

__all__ = ["apply_writes", "router_snapshot", "router_views"]


def apply_writes(
    plan: Plan, run: RunState, writers: Sequence[tuple[str, Sequence[tuple[str, object]]]]
) -> set[str]:
    """Merge the step's writes into ``run.values``; return the keys whose value was written.

    ``writers`` pairs each writer (node name, or ``START`` for input) with its
    writes, in the order the tasks were scheduled: nodes by name, then ``Send``
    tasks in the order they were sent (as LangGraph does). The result never
    depends on which node finished first.
    """
    if plan.volatile or plan.untracked:  # EphemeralValue, Topic, UntrackedValue keys
        run.untracked = plan.untracked
        changed = _apply_all(plan, run, writers)
        if plan.volatile and (len(writers) != 1 or writers[0][0] != START):  # not after the input
            clear_unwritten(plan, run.values, run.versions, changed)
        return changed
    if len(writers) == 1:
        name, writes = writers[0]
        if len(writes) < 2 or len({k for k, _ in writes}) == len(writes):
            return _apply_one(plan, run, name, writes)
    return _apply_all(plan, run, writers)


def router_snapshot(
    plan: Plan, routed: Sequence[Task], tasks: Sequence[Task], values: dict[str, object]
) -> dict[str, object] | None:
    """``values`` before the step of ``tasks`` merges, when one of the ``routed`` ones has conditional
    edges: they read it with only their own task's writes merged (:func:`router_views`).

    The containers the step writes are copied (once each): a reducer that changes its first argument
    in place would otherwise change the snapshot while the step merges.
    """
    if not any(plan.branches.get(t.name) for t in routed):
        return None
    snapshot = dict(values)
    for key in {key for task in tasks for key, _ in task.writes if key in snapshot}:
        snapshot[key] = _copied(snapshot[key])
    return snapshot


def router_views(
    plan: Plan, tasks: Sequence[Task], before: dict[str, object]
) -> list[dict[str, object] | None]:
    """What each task's conditional edges read: ``before`` (the step's snapshot) with only that task's
    writes merged, as in LangGraph (a router does not see a sibling's writes); ``None`` for a task
    without conditional edges. The step's merge (:func:`apply_writes`) already accepted these writes."""
    return [_own_view(plan, before, t.name, t.writes) if plan.branches.get(t.name) else None for t in tasks]


def _own_view(
    plan: Plan, values: dict[str, object], name: str, writes: Sequence[tuple[str, object]]
) -> dict[str, object]:
    channels, view = plan.channels, dict(values)
    pending: dict[str, list[object]] = {}
    for key, value in writes:
        if key in channels:
            pending.setdefault(key, []).append(value)
    for key in plan.volatile:  # what the previous step wrote to a volatile key is gone, as after the merge
        if key not in pending and key in view:
            pending[key] = []
    for key, vals in pending.items():
        current = values.get(key, MISSING)  # copied: views of one step share the snapshot
        new = channels[key].merge(_copied(current), vals, [name] * len(vals))
        if new is MISSING:
            view.pop(key, None)
        else:
            view[key] = new
    return view


_MUTABLE: tuple[type[object], ...] = (list, dict, set)


def _copied(value: object) -> object:
    """A shallow copy of a list, dict or set (a reducer may change its first argument in place)."""
    return copy.copy(value) if isinstance(value, _MUTABLE) else value


def _apply_all(
    plan: Plan, run: RunState, writers: Sequence[tuple[str, Sequence[tuple[str, object]]]]
) -> set[str]:
    pending: dict[str, tuple[list[object], list[str]]] = {}
    channels = plan.channels
    for name, writes in writers:  # already ordered: pulls by node name, then Send tasks in order
        for key, value in writes:
            if key not in channels:
                _unknown_key(plan, name, key, value)
                continue
            slot = pending.get(key)
            if slot is None:
                pending[key] = ([value], [name])
            else:
                slot[0].append(value)
                slot[1].append(name)
    for key, (vals, nodes) in pending.items():
        _merge(channels[key], run, key, vals, nodes)
    return set(pending)


def _apply_one(plan: Plan, run: RunState, name: str, writes: Sequence[tuple[str, object]]) -> set[str]:
    channels = plan.channels
    changed: set[str] = set()
    values, versions = run.values, run.versions
    for key, value in writes:
        channel = channels.get(key)
        if channel is None:
            _unknown_key(plan, name, key, value)
            continue
        if (
            type(channel) is LastValue
            and run.bump is next_version
            and type(value) is not dict
            and not isinstance(value, Overwrite)
        ):  # _merge's work for the common key (one plain value overwriting), inline
            values[key] = value
            version = versions.get(key)
            versions[key] = 1 if version is None else version + 1
        else:  # the narrowing above leaves value a union of what it excluded
            _merge(channel, run, key, (cast(Any, value),), (name,))
        changed.add(key)
    return changed


def _merge(channel: Any, run: RunState, key: str, vals: Sequence[object], nodes: Sequence[str]) -> None:
    values = run.values
    try:
        new = channel.merge(values.get(key, MISSING), vals, nodes)
    except InvalidUpdateError as err:
        err.step = run.step if err.step is None else err.step
        if err.node is None and nodes:
            err.node = nodes[0]
        raise
    if new is MISSING:
        values.pop(key, None)
    else:
        values[key] = new
    run.versions[key] = run.bump(run.versions.get(key), None)


def _unknown_key(plan: Plan, node: str, key: str, value: object) -> None:
    if plan.strict:
        raise StrictModeError(
            f"Node {node!r} wrote key {key!r}, which no schema declares (value: {value!r:.80}). "
            f"Declared keys: {sorted(plan.channels)}. Add {key!r} to the state schema or fix the typo.",
            node=node,
            key=key,
            value=value,
        )
    warnings.warn(  # LangGraph drops such writes silently; plait drops them too, but says so (once)
        f"Node {node!r} wrote key {key!r}, which no schema declares; the value was dropped. Declare "
        f"{key!r} in the state schema (or compile(strict=True) to make this an error).",
        UndeclaredKeyWarning,
        stacklevel=2,
    )
