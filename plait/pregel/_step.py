"""THE superstep, without I/O.

A run is a sequence of supersteps. Each one:

1. :func:`prepare_tasks` — every scheduled node gets its input, read from one
   snapshot of the state (parallel nodes never see each other's writes);
2. the driver runs the tasks and hands each result to :func:`collect`, which turns it
   into ``(key, value)`` writes plus explicit ``goto`` targets;
3. :func:`~plait.pregel._writes.apply_writes` merges all writes key by key, in node-name
   order, through each key's channel (overwrite or reducer), and bumps the versions of the
   keys written;
4. the driver calls the conditional edges' routing functions (:func:`routers`; in a step of
   several tasks each reads the step's snapshot with only its own task's writes merged),
   then :func:`schedule` follows static edges, their answers, joins and
   ``Command.goto`` to pick the next step's tasks.

No user code runs here and nothing here copies the state: nodes get a fresh
shallow dict of the keys they read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, cast

from plait.constants import END, START
from plait.errors import InvalidUpdateError
from plait.pregel._managed import fill_managed
from plait.pregel._plan import NodeSpec, Plan
from plait.pregel._router_args import RouterTask, bind, in_task
from plait.pregel._run_state import RunState, hold_deferred
from plait.pregel._task import Task
from plait.pregel._traced import start_routes
from plait.types import Send

__all__ = ["prepare_tasks", "read_state", "route", "routers", "schedule", "scheduled", "send_indices"]


def read_state(
    values: Mapping[str, object], reads: Iterable[str], defaults: Iterable[tuple[str, object]]
) -> dict[str, object]:
    """Return a fresh dict of the keys in ``reads`` that are set, plus defaults."""
    out = {k: values[k] for k in reads if k in values}
    for key, default in defaults:
        if key not in out:
            out[key] = default
    return out


def _node_input(node: NodeSpec, values: Mapping[str, object], step: int, stop: int) -> object:
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
    nodes, values = plan.nodes, run.values
    tasks: list[Task] = []
    for name in run.next:
        node = nodes[name]
        if node.managed or node.make_input is not None or node.defaults:
            tasks.append(Task(name, node, _node_input(node, values, step, stop)))
        else:  # a plain dict of the keys it reads (the common node)
            tasks.append(Task(name, node, {k: values[k] for k in node.reads if k in values}))
    if not run.sends:
        return tasks
    indices = send_indices(run.next, run.sends)
    for position, (name, arg) in enumerate(run.sends):
        tasks.append(Task(name, plan.nodes[name], arg, index=indices[position], push=position))
    return tasks


def scheduled(pulls: Sequence[str], sends: Sequence[tuple[str, object]]) -> list[tuple[str, int]]:
    """``(node, index)`` of each task a step schedules: its pulls, then its sends (see :func:`send_indices`)."""
    return [
        *((name, 0) for name in pulls),
        *zip((n for n, _ in sends), send_indices(pulls, sends), strict=True),
    ]


def send_indices(pulls: Iterable[str], sends: Iterable[tuple[str, object]]) -> list[int]:
    """The index of each ``Send``'s task among its node's tasks in the step (pulls come first, as
    index 0): with the checkpoint id and the node's name, it makes the task's id."""
    counts = dict.fromkeys(pulls, 0)
    out: list[int] = []
    for name, _ in sends:
        out.append(counts.setdefault(name, -1) + 1)
        counts[name] = out[-1]
    return out


def branch_state(plan: Plan, values: Mapping[str, object], step: int, stop: int) -> object:
    """The state as conditional-edge functions receive it: the state schema's keys of ``values``
    (defaults filled in), with its managed values for ``step`` of a run that ends at ``stop``."""
    state = read_state(values, plan.state_keys, plan.defaults)
    if plan.managed:
        fill_managed(state, plan.managed, step, stop)
    return state if plan.state_make is None else plan.state_make(state)


def routers(  # noqa: PLR0913 - the step, and what each router reads
    plan: Plan,
    finished: Sequence[Task],
    config: Mapping[str, object],
    values: Mapping[str, object] | None = None,
    steps: tuple[int, int] | None = None,
    views: Sequence[Mapping[str, object] | None] | None = None,
    loop: Any = None,
) -> tuple[Callable[[object], object], ...]:
    """The routing functions ``finished`` triggers, in the order :func:`schedule` takes their answers.

    Each takes the state; one that declared a ``config`` parameter gets ``config`` too, and one that
    declared a state schema of its own gets that schema's keys of ``values`` (the run's values) instead,
    with its managed values set from ``steps`` (``(step, stop)``, as :func:`fill_managed` takes them).
    ``views``: for each task, the values its routers read instead of ``values`` (``None``: ``values``);
    a router given one gets its state from it, not the state the driver passes.
    ``loop``: the run (:class:`~plait.pregel._loop.Loop`), whose store, context and stream routers
    that declare ``store``, ``writer`` or ``runtime`` receive (``None``: no store, no stream).
    """
    calls: list[Callable[[object], object]] = []
    for index, task in enumerate(finished):
        seen = views[index] if views is not None else None
        read = values if seen is None else seen
        branches = plan.branches.get(task.name, ())
        held = getattr(task, "trace", None)  # the START pseudo-task has none
        if held is None and task.name == START and branches and config.get("callbacks"):
            held = start_routes(config, len(branches), steps[0] if steps else 0, dict(values or {}))
        pending = None if loop is None or not branches else RouterTask(loop, task, config)
        own_config: Mapping[str, object] = config
        if (
            pending is not None
            and held is None
            and task.name != START
            and any(b.takes_config for b in branches)
        ):
            own_config = pending.resolve().node_config  # its task's, as LangGraph's routers get it
        for position, branch in enumerate(branches):
            seen_config = own_config if held is None else held.router_config(config, position)
            call = partial(_with_config, branch.path, seen_config) if branch.takes_config else branch.path
            if branch.extras:
                call = bind(branch.path, branch.extras, loop, task, seen_config)
            if branch.reads is not None and read is not None:
                own = read_state(read, branch.reads, ())
                if branch.managed and steps is not None:
                    fill_managed(own, branch.managed, *steps)
                call = partial(_on, call, own if branch.make_input is None else branch.make_input(own))
            elif seen is not None and steps is not None:
                call = partial(_on, call, branch_state(plan, seen, *steps))
            if pending is not None:
                call = partial(in_task, pending, call)
            calls.append(call if held is None else held.route(call, branch.path, position))
    return tuple(calls)


def _with_config(
    path: Callable[[object, Mapping[str, object]], object], config: Mapping[str, object], state: object
) -> object:
    return path(state, config)


def _on(path: Callable[[object], object], own: object, state: object) -> object:
    """``path`` called on the state it declared (``own``) rather than the graph's (``state``)."""
    return path(own)


def schedule(plan: Plan, run: RunState, finished: Sequence[Task], answers: Sequence[object] = ()) -> None:
    """Choose the tasks of the next step from what ``finished`` did.

    Args:
        plan: The compiled plan.
        run: The run; ``next``, ``sends`` and ``barriers`` are replaced/updated.
        finished: The tasks of the step that just ran (or the ``START`` pseudo-task).
        answers: What the calls of :func:`routers` returned (awaited), in their order.
    """
    if len(finished) == 1 and not plan.deferred:  # one task with static edges only: its targets
        task = finished[0]
        if not task.goto and task.name not in plan.branches and task.name not in plan.joins:
            targets = plan.edges.get(task.name, ())
            run.next = sorted(set(targets)) if len(targets) > 1 else list(targets)
            run.sends = []
            return
    pulls: dict[str, None] = {}
    sends: list[tuple[str, object]] = []
    pending = iter(answers)
    for task in finished:
        name = task.name
        for target in plan.edges.get(name, ()):
            pulls[target] = None
        for branch in plan.branches.get(name, ()):
            route(plan, name, next(pending), pulls, sends, branch.path_map)
        if task.goto:
            route(plan, name, task.goto, pulls, sends, None)
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


def route(
    plan: Plan,
    source: str,
    result: Any,
    pulls: dict[str, None],
    sends: list[tuple[str, object]],
    path_map: Mapping[Any, str] | None,
) -> None:
    """Add what ``source``'s router answered (``result``, mapped through ``path_map``) to the next
    step: node names to ``pulls``, ``Send`` objects to ``sends``.

    Raises:
        InvalidUpdateError: an answer names no node of the graph or is not in ``path_map``.
    """
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
