"""THE superstep, without I/O.

A run is a sequence of supersteps. Each one:

1. :func:`prepare_tasks` — every scheduled node gets its input, read from one
   snapshot of the state (parallel nodes never see each other's writes);
2. the driver runs the tasks and hands each result to :func:`collect`, which turns it
   into ``(key, value)`` writes plus explicit ``goto`` targets;
3. :func:`apply_writes` merges all writes key by key, in node-name order, through each
   key's channel (overwrite or reducer), and bumps the versions of the keys written;
4. the driver calls the conditional edges' routing functions (:func:`routers`),
   then :func:`schedule` follows static edges, their answers, joins and
   ``Command.goto`` to pick the next step's tasks.

No user code runs here and nothing here copies the state: nodes get a fresh
shallow dict of the keys they read.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from plait._schema import MISSING
from plait.checkpoint.base import now_iso
from plait.constants import END, START
from plait.errors import InvalidUpdateError, StrictModeError, UndeclaredKeyWarning
from plait.pregel._defer import hold_deferred, next_version
from plait.pregel._managed import clear_unwritten, fill_managed
from plait.pregel._plan import NodeSpec, Plan
from plait.pregel._task import Task
from plait.types import Send

__all__ = ["RunState", "apply_writes", "prepare_tasks", "read_state", "routers", "schedule"]


@dataclass(slots=True)
class RunState:
    """The mutable state of one run: values, versions, barriers and what runs next.

    Attributes:
        values: Current value of every written key (unset keys are absent).
        versions: Version counter of every key (bumped when its value changes).
        barriers: Sources seen so far by each join barrier.
        next: Names of the nodes scheduled for the next step (state input).
        sends: ``(node, arg)`` pairs scheduled by ``Send``.
        step: Number of the step about to run.
    """

    values: dict[str, Any]
    # the factories are cast once, here, to the element types (they stay the builtins dict and list)
    versions: dict[str, int] = field(default_factory=cast("Callable[[], dict[str, int]]", dict))
    barriers: dict[str, set[str]] = field(default_factory=cast("Callable[[], dict[str, set[str]]]", dict))
    next: list[str] = field(default_factory=cast("Callable[[], list[str]]", list))
    sends: list[tuple[str, Any]] = field(default_factory=cast("Callable[[], list[tuple[str, Any]]]", list))
    step: int = 0
    deferred: set[str] = field(default_factory=cast("Callable[[], set[str]]", set))
    bump: Callable[[Any, None], Any] = next_version  # a saver's get_next_version when it has its own
    untracked: frozenset[str] = frozenset()  # keys never checkpointed (UntrackedValue), set by apply_writes

    def checkpoint(self, cid: str, changed: set[str]) -> tuple[dict[str, Any], dict[str, int]]:
        """The checkpoint of the current state and the versions of the ``changed`` keys."""
        values = self.values
        if self.untracked:
            values = {k: v for k, v in values.items() if k not in self.untracked}
            changed = changed - self.untracked
        checkpoint = {
            "v": 1,
            "id": cid,
            "ts": now_iso(),
            "channel_values": dict(values),
            "channel_versions": dict(self.versions),
            "updated_channels": sorted(changed),
            "next": list(self.next),
            "sends": list(self.sends),
            "barriers": {k: sorted(v) for k, v in self.barriers.items()},
            "interrupts": [],
        }
        if self.deferred:
            checkpoint["deferred"] = sorted(self.deferred)
        return checkpoint, {k: self.versions[k] for k in changed if k in self.versions}


def read_state(
    values: Mapping[str, Any], reads: Iterable[str], defaults: Iterable[tuple[str, Any]]
) -> dict[str, Any]:
    """Return a fresh dict of the keys in ``reads`` that are set, plus defaults."""
    out = {k: values[k] for k in reads if k in values}
    for key, default in defaults:
        if key not in out:
            out[key] = default
    return out


def _node_input(node: NodeSpec, values: Mapping[str, Any], step: int, stop: int) -> Any:
    state = read_state(values, node.reads, node.defaults)
    if node.managed:
        fill_managed(state, node.managed, step, stop)
    return state if node.make_input is None else node.make_input(state)


def prepare_tasks(plan: Plan, run: RunState, stop: int | None = None) -> list[Task]:
    """Build the tasks of the step about to run, reading one snapshot of the state.

    ``stop`` (the recursion limit's last step) sets managed values such as ``RemainingSteps``.
    """
    step = run.step
    stop = step + 1 if stop is None else stop
    tasks = [
        Task(name, plan.nodes[name], _node_input(plan.nodes[name], run.values, step, stop))
        for name in run.next
    ]
    counts: dict[str, int] = {}
    for name, arg in run.sends:
        index = counts[name] = counts.get(name, -1) + 1
        tasks.append(Task(name, plan.nodes[name], arg, index=index))
    return tasks


def apply_writes(
    plan: Plan, run: RunState, writers: Sequence[tuple[str, Sequence[tuple[str, Any]]]]
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


def _apply_all(
    plan: Plan, run: RunState, writers: Sequence[tuple[str, Sequence[tuple[str, Any]]]]
) -> set[str]:
    pending: dict[str, tuple[list[Any], list[str]]] = {}
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


def _apply_one(plan: Plan, run: RunState, name: str, writes: Sequence[tuple[str, Any]]) -> set[str]:
    channels = plan.channels
    changed: set[str] = set()
    for key, value in writes:
        channel = channels.get(key)
        if channel is None:
            _unknown_key(plan, name, key, value)
            continue
        _merge(channel, run, key, (value,), (name,))
        changed.add(key)
    return changed


def _merge(channel: Any, run: RunState, key: str, vals: Sequence[Any], nodes: Sequence[str]) -> None:
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


def _unknown_key(plan: Plan, node: str, key: str, value: Any) -> None:
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


def routers(
    plan: Plan, finished: Sequence[Task], config: Mapping[str, Any]
) -> tuple[Callable[[Any], Any], ...]:
    """The routing functions ``finished`` triggers, in the order :func:`schedule` takes their answers.

    Each takes the state; one that declared a ``config`` parameter gets ``config`` too.
    """
    calls: list[Callable[[Any], Any]] = []
    for task in finished:
        for branch in plan.branches.get(task.name, ()):
            calls.append(partial(_with_config, branch.path, config) if branch.takes_config else branch.path)
    return tuple(calls)


def _with_config(path: Callable[[Any, Any], Any], config: Mapping[str, Any], state: Any) -> Any:
    return path(state, config)


def schedule(plan: Plan, run: RunState, finished: Sequence[Task], answers: Sequence[Any] = ()) -> None:
    """Choose the tasks of the next step from what ``finished`` did.

    Args:
        plan: The compiled plan.
        run: The run; ``next``, ``sends`` and ``barriers`` are replaced/updated.
        finished: The tasks of the step that just ran (or the ``START`` pseudo-task).
        answers: What the calls of :func:`routers` returned (awaited), in their order.
    """
    pulls: dict[str, None] = {}
    sends: list[tuple[str, Any]] = []
    pending = iter(answers)
    for task in finished:
        name = task.name
        for target in plan.edges.get(name, ()):
            pulls[target] = None
        for branch in plan.branches.get(name, ()):
            _route(plan, name, next(pending), pulls, sends, branch.path_map)
        if task.goto:
            _route(plan, name, task.goto, pulls, sends, None)
        for join in plan.joins.get(name, ()):
            seen = run.barriers.setdefault(join.key, set())
            seen.add(name)
            if seen >= join.sources:
                del run.barriers[join.key]
                pulls[join.target] = None
    run.next = sorted(pulls) if len(pulls) > 1 else list(pulls)
    run.sends = sends
    if plan.deferred:
        hold_deferred(plan.deferred, run)


def _route(
    plan: Plan,
    source: str,
    result: Any,
    pulls: dict[str, None],
    sends: list[tuple[str, Any]],
    path_map: Mapping[Any, str] | None,
) -> None:
    # a list of answers (isinstance() leaves the items Unknown) or a single one
    items = cast("Sequence[Any]", result) if isinstance(result, (list, tuple)) else [result]
    for item in items:
        if isinstance(item, Send):
            if item.node not in plan.nodes:
                raise InvalidUpdateError(
                    f"Send from {source!r} targets unknown node {item.node!r}", node=source, value=item
                )
            sends.append((item.node, item.arg))
            continue
        target = item
        if path_map is not None:
            if item not in path_map:
                raise InvalidUpdateError(
                    f"Conditional edge from {source!r} returned {item!r}, which is not in its path map "
                    f"{sorted(map(str, path_map))}",
                    node=source,
                    value=item,
                )
            target = path_map[item]
        if target == END or target is None:
            continue
        if target not in plan.nodes or target == START:
            raise InvalidUpdateError(
                f"Node {source!r} routed to {target!r}, which is not a node of this graph. "
                f"Known nodes: {sorted(plan.nodes)}",
                node=source,
                value=item,
            )
        pulls[target] = None
