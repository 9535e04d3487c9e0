"""Subgraphs seen from their parent: where each keeps its state, and their snapshots."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Protocol, TypeVar

from plait.checkpoint._task_ids import legacy_segments, legacy_task_key
from plait.pregel._plan import Plan
from plait.pregel._thread import ThreadRef, config_with, configurable_of
from plait.pregel._travel import stable_ns
from plait.types import PregelTask, StateSnapshot

__all__ = [
    "addressed_graph",
    "aread_snapshot",
    "own_namespace",
    "owner_of",
    "recast_ns",
    "awith_task_states",
    "read_snapshot",
    "subgraph_namespace",
    "subgraphs_of",
    "task_state_config",
    "with_task_states",
]


class _Saving(Protocol):
    """How a graph keeps a subgraph's state (a ``Pregel``'s ``subgraph_saving``)."""

    @property
    def subgraph_saving(self) -> str: ...


class _Owner(Protocol):
    """A graph whose subgraphs a config may address (its plan)."""

    @property
    def plan(self) -> Plan: ...


G = TypeVar("G", bound=_Owner)
Reader = Callable[[object, dict[str, object]], StateSnapshot | None]
AsyncReader = Callable[[object, dict[str, object]], Awaitable[StateSnapshot | None]]


def subgraph_namespace(plan: Plan, task: PregelTask, parent_ns: str, *, stored: bool = True) -> str | None:
    """The checkpoint namespace the subgraph of ``task`` saves into (``None``: not a subgraph,
    or one that keeps no state); ``stored=False``: the task's own namespace, which a subgraph
    keeping state across runs (``checkpointer=True``) is addressed by too."""
    spec = plan.nodes.get(task.name)
    sub = spec.subgraph if spec is not None else None
    if sub is None or sub.subgraph_saving == "off":
        return None
    # the first call of the task, as the running node names it (see _callable._subgraph_config)
    if sub.subgraph_saving == "persist" and stored:
        segment, parent_ns = task.name, stable_ns(parent_ns)
    else:
        segment = f"{task.name}:{task.id}"
    return f"{parent_ns}|{segment}" if parent_ns else segment


def task_state_config(
    plan: Plan, task: PregelTask, located: Mapping[str, object], *, stored: bool = False
) -> dict[str, object] | None:
    """The config of where ``task``'s subgraph keeps its state (``None``: not a subgraph, or one
    that keeps none), ``located`` being the configurable keys of the checkpoint that schedules it."""
    ns = subgraph_namespace(plan, task, str(located.get("checkpoint_ns") or ""), stored=stored)
    return (
        None if ns is None else {"configurable": {"thread_id": located.get("thread_id"), "checkpoint_ns": ns}}
    )


def _targets(plan: Plan, snap: StateSnapshot, stored: bool) -> Iterator[tuple[int, object, dict[str, Any]]]:
    located: Mapping[str, object] = snap.config.get("configurable", {})
    for index, task in enumerate(snap.tasks):
        config = task_state_config(plan, task, located, stored=stored)
        if config is not None:
            yield index, plan.nodes[task.name].subgraph, config


def _places(snap: StateSnapshot, position: int, config: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Where this task's subgraph keeps its state: ``config``, then the namespaces earlier plait
    versions gave it (a thread they paused), newest form first."""
    yield config
    task = snap.tasks[position]
    ns: str = config["configurable"]["checkpoint_ns"]
    own = f"{task.name}:{task.id}"
    if not ns.endswith(own):  # a subgraph kept across runs: no task id
        return
    index = sum(1 for t in snap.tasks[:position] if t.name == task.name)
    old = legacy_task_key(snap.config.get("configurable", {}).get("checkpoint_id"), task.name, index)
    for segment in legacy_segments(task.name, old, 0):
        yield {"configurable": {**config["configurable"], "checkpoint_ns": ns[: -len(own)] + segment}}


# >>> async source
async def awith_task_states(plan: Plan, snap: StateSnapshot, read: AsyncReader | None) -> StateSnapshot:
    """``snap`` with each subgraph task's ``state``: its config, or (``read`` given) its snapshot
    (a thread an earlier version paused: found under the namespace that version gave it)."""
    tasks = list(snap.tasks)
    for index, sub, config in _targets(plan, snap, read is not None):
        state: Any = config
        if read is not None:
            for place in _places(snap, index, config):
                if (state := await read(sub, place)) is not None:
                    break
        tasks[index] = tasks[index]._replace(state=state)
    return snap._replace(tasks=tuple(tasks))


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def with_task_states(plan: Plan, snap: StateSnapshot, read: Reader | None) -> StateSnapshot:
    """``snap`` with each subgraph task's ``state``: its config, or (``read`` given) its snapshot
    (a thread an earlier version paused: found under the namespace that version gave it)."""
    tasks = list(snap.tasks)
    for index, sub, config in _targets(plan, snap, read is not None):
        state: Any = config
        if read is not None:
            for place in _places(snap, index, config):
                if (state := read(sub, place)) is not None:
                    break
        tasks[index] = tasks[index]._replace(state=state)
    return snap._replace(tasks=tuple(tasks))


# <<< generated sync


def subgraphs_of(plan: Plan, namespace: str | None, recurse: bool) -> Iterator[tuple[str, Any]]:
    """The subgraph nodes of ``plan`` as ``(name, graph)`` (``namespace``: only that one, by path)."""
    for name, spec in plan.nodes.items():
        sub = spec.subgraph
        if sub is None or sub.subgraph_saving == "off":  # keeps no state: nothing to address
            continue
        if namespace is not None:
            head, _, rest = namespace.partition("|")
            if head.split(":")[0] != name:
                continue
            if rest:
                yield from ((f"{name}|{n}", g) for n, g in subgraphs_of(sub.plan, rest, recurse))
                continue
        yield name, sub
        if recurse and namespace is None:
            yield from ((f"{name}|{n}", g) for n, g in subgraphs_of(sub.plan, None, True))


def recast_ns(ns: str) -> str:
    """A namespace as a path of subgraph nodes: task ids and call numbers dropped
    (``a:tid|1|b:tid`` -> ``a|b``)."""
    return "|".join(part.split(":")[0] for part in ns.split("|") if not part.isdigit())


def addressed_graph(plan: Plan, saver: object, ns: str, *, for_update: bool = False) -> Any:
    """The subgraph whose state a namespaced config (``checkpoint_ns`` set) addresses, saving in
    ``saver``; ``None`` for a namespace no declared subgraph has (read with the parent's channels).

    Raises:
        ValueError: ``for_update`` and no declared subgraph has ``ns``: the parent's nodes and
            channels would write the wrong state into it.
    """
    path = recast_ns(ns)
    for _, sub in subgraphs_of(plan, path, recurse=True):
        return sub.with_saver(saver)
    if for_update:
        raise ValueError(
            f"Subgraph {path} not found: no node of this graph runs a declared subgraph at namespace "
            f"{ns!r}; update it with the graph that runs there"
        )
    return None


def own_namespace(graph: _Saving, config: Mapping[str, object]) -> Mapping[str, object]:
    """``config`` addressing where ``graph`` keeps its state: a subgraph kept across runs
    (``checkpointer=True``) is found by its task's namespace too (task ids dropped)."""
    ns = str(configurable_of(config).get("checkpoint_ns") or "")
    if graph.subgraph_saving != "persist" or ":" not in ns:
        return config
    return config_with(config, checkpoint_ns=stable_ns(ns))


def owner_of(
    graph: G, config: Mapping[str, object], saver: Callable[[], object], *, for_update: bool = False
) -> G:
    """The graph whose state ``config`` addresses: ``graph``, or its subgraph at the namespace
    (``saver``: ``graph``'s checkpointer, asked for only then).

    Raises:
        ValueError: ``for_update`` and the namespace is no declared subgraph's.
    """
    ns = ThreadRef.from_config(config).checkpoint_ns
    sub: G | None = addressed_graph(graph.plan, saver(), ns, for_update=for_update) if ns else None
    return graph if sub is None else sub


# >>> async source
async def aread_snapshot(saver: object, sub: Any, config: dict[str, object]) -> StateSnapshot | None:
    """A subgraph's newest snapshot in the parent's thread (its own subgraphs filled in too)."""
    graph = sub.with_saver(saver)
    snap: StateSnapshot = await graph.astate_here(config, subgraphs=True)
    return None if snap.metadata is None else snap


# <<< async source


# >>> generated sync (made by tools/unasync_gen.py from the async source above -- do not edit)
def read_snapshot(saver: object, sub: Any, config: dict[str, object]) -> StateSnapshot | None:
    """A subgraph's newest snapshot in the parent's thread (its own subgraphs filled in too)."""
    graph = sub.with_saver(saver)
    snap: StateSnapshot = graph.state_here(config, subgraphs=True)
    return None if snap.metadata is None else snap


# <<< generated sync
