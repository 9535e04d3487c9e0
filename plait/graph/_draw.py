"""``get_graph()``: a compiled graph as a langchain-core ``Graph`` (Mermaid, PNG, ASCII, JSON).

The edges are found the way LangGraph finds them, so the drawings match its text:
a dry run of the graph's wiring from ``__start__`` (no node is called) in which
every node writes along its edges on each visit and along its conditional edges
on its first visit only. An edge is drawn when its target is triggered; a node
that triggers nothing and is the target of some edge gets an edge to
``__end__``; when nothing reaches ``__end__`` and the dry run ends on a single
node, that node gets a dotted edge to it. Nodes the dry run never reaches are
drawn without edges.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, NamedTuple, cast

from langchain_core.runnables import Runnable
from langchain_core.runnables.graph import Graph

from plait.constants import END, START
from plait.graph._spec import GraphSpec

__all__ = ["DrawableGraph", "draw_builder"]

_DRY_RUN_STEPS = 251  # LangGraph dry-runs steps -1 to 249


class DrawableGraph(Graph):
    """langchain-core's ``Graph``; ``draw_ascii`` falls back to an edge list without grandalf."""

    def draw_ascii(self) -> str:
        """The graph as ASCII art (needs ``grandalf``); without it, one ``a --> b`` line per edge."""
        try:
            return super().draw_ascii()
        except ImportError:
            return "".join(
                f"{e.source} {'-.->' if e.conditional else '-->'} {e.target}\n" for e in self.edges
            )


class _Edge(NamedTuple):
    source: str
    target: str
    conditional: bool
    label: str | None


class _Write(NamedTuple):
    channel: str
    conditional: bool
    label: str | None


def _to(node: str) -> str:
    return f"to:{node}"


class _Wiring:
    """The channels each node writes and the channels that trigger each node."""

    def __init__(self, builder: GraphSpec) -> None:
        names = [START, *builder.nodes]
        self.every_visit: dict[str, list[_Write]] = {n: [] for n in names}
        self.first_visit: dict[str, list[_Write]] = {n: [] for n in names}
        self.end_edges: dict[str, list[_Edge]] = {n: [] for n in names}
        self.joins: dict[str, tuple[frozenset[str], str]] = {}
        for source, target in sorted(builder.edges):
            if target != END and source in self.every_visit:
                self.every_visit[source].append(_Write(_to(target), False, None))
        for sources, target in sorted(builder.waiting_edges):
            channel = f"join:{'+'.join(sources)}:{target}"
            self.joins[channel] = (frozenset(sources), target)
            for source in sources:
                if source in self.every_visit:
                    self.every_visit[source].append(_Write(channel, False, None))
        for source, branches in builder.branches.items():
            for branch in branches.values():
                labels = {str(v): str(k) for k, v in (branch.path_map or {}).items()}
                for target in branch.ends:
                    label = labels.get(target, target)
                    if target == END:
                        self.end_edges[source].append(_Edge(source, END, True, label))
                    else:
                        self.first_visit[source].append(_Write(_to(target), True, label))
        self._destinations(builder)

    def _destinations(self, builder: GraphSpec) -> None:
        """The ``Command(goto=...)`` targets each node declares, drawn as conditional edges."""
        for name, node in builder.nodes.items():
            for target, label in node.destinations:
                if target == END:
                    self.end_edges[name].append(_Edge(name, END, True, label or target))
                else:
                    self.first_visit[name].append(_Write(_to(target), True, label or target))

    def dry_run(self) -> tuple[set[_Edge], set[str]]:
        """The edges found, and the nodes of the dry run's last step."""
        edges: set[_Edge] = set()
        seen_branches: set[str] = set()
        sources: dict[str, set[_Write]] = {}
        joined: dict[str, set[str]] = {c: set() for c in self.joins}
        tasks = [START]
        step_sources: dict[str, set[_Write]] = {}
        for _ in range(_DRY_RUN_STEPS):
            if not tasks:
                break
            step_sources = {}
            for task in tasks:
                writes = set(self.every_visit[task])
                if task not in seen_branches:
                    seen_branches.add(task)
                    writes |= set(self.first_visit[task])
                    edges.update(self.end_edges[task])
                step_sources[task] = writes
            sources.update(step_sources)
            fired = self._fire(step_sources, joined)
            by_channel: dict[str, set[tuple[str, bool, str | None]]] = {}
            for src, writes in sources.items():
                for write in writes:
                    by_channel.setdefault(write.channel, set()).add((src, write.conditional, write.label))
            for task, triggers in fired.items():
                added = False
                for channel in sorted(triggers):
                    for src, cond, label in sorted(by_channel.get(channel, ()), key=_order):
                        edges.add(_Edge(src, task, cond, label))
                        write = _Write(channel, cond, label)
                        if write in step_sources.get(src, ()):
                            added = True
                        else:
                            sources[src].discard(write)
                if not added:
                    edges.update(_Edge(src, task, True, None) for src in step_sources)
            tasks = list(fired)
        return edges, set(step_sources)

    def _fire(self, step: dict[str, set[_Write]], joined: dict[str, set[str]]) -> dict[str, set[str]]:
        """The nodes the step's writes trigger, each with the channels that triggered it."""
        fired: dict[str, set[str]] = {}
        for src, writes in step.items():
            for write in writes:
                if write.channel in self.joins:
                    joined[write.channel].add(src)
                else:
                    fired.setdefault(write.channel.removeprefix("to:"), set()).add(write.channel)
        for channel, (needed, target) in self.joins.items():
            if needed <= joined[channel] and any(
                channel in {w.channel for w in step.get(s, ())} for s in needed
            ):
                joined[channel] = set()
                fired.setdefault(target, set()).add(channel)
        return fired


def _order(item: tuple[str, bool, str | None]) -> tuple[str, bool, str]:
    return item[0], item[1], item[2] or ""


def _edge_order(edge: _Edge) -> tuple[str, str, bool, str]:
    return edge.source, edge.target, edge.conditional, edge.label or ""


def _add_edge(graph: Graph, source: str, target: str, label: str | None, conditional: bool) -> None:
    if any(e.source == source and e.target == target for e in graph.edges):
        return
    if target == END and END not in graph.nodes:
        graph.add_node(None, END)
    graph.add_edge(graph.nodes[source], graph.nodes[target], label, conditional)


def _metadata(
    name: str, node: object, runnable: object, interrupts: tuple[Collection[str], Collection[str]]
) -> dict[str, object] | None:
    meta: dict[str, object] = dict(getattr(node, "metadata", None) or {})
    if getattr(node, "defer", False):
        meta["defer"] = True
    in_before, in_after = (name in i for i in interrupts)  # as in LangGraph, "*" marks no node
    if in_before and in_after:
        meta["__interrupt"] = "before,after"
    elif in_before:
        meta["__interrupt"] = "before"
    elif in_after:
        meta["__interrupt"] = "after"
    tools = getattr(runnable, "tools_by_name", None)
    if isinstance(tools, Mapping) and tools:
        meta["__tools"] = list(cast("Mapping[str, object]", tools))
    return meta or None


def _inline_subgraph(graph: Graph, name: str, inner: Graph) -> None:
    """Replace node ``name`` by ``inner``'s nodes (ids prefixed ``name:``), as LangGraph's xray does."""
    if len(inner.nodes) <= 1 or name not in graph.nodes or not inner.first_node() or not inner.last_node():
        return
    inner.trim_first_node()
    inner.trim_last_node()
    graph.nodes.pop(name)
    first, last = graph.extend(inner, prefix=name)
    for idx, edge in enumerate(graph.edges):
        if edge.source == name and last is not None:
            edge = edge.copy(source=last.id)
        if edge.target == name and first is not None:
            edge = edge.copy(target=first.id)
        graph.edges[idx] = edge


def draw_builder(
    builder: GraphSpec,
    runnables: Mapping[str, Runnable[Any, Any]],
    interrupts: tuple[Collection[str], Collection[str]] = ((), ()),
    xray: int | bool = False,
) -> DrawableGraph:
    """The drawing of a compiled graph.

    Args:
        builder: The graph's builder.
        runnables: Each node's runnable (``__start__`` included), stored as the drawn node's data.
        interrupts: The compiled ``interrupt_before`` and ``interrupt_after`` node names.
        xray: Draw subgraphs' nodes in place of the subgraph (``"sub:inner"``): ``True`` at every
            depth, a number for that many levels.
    """
    graph = DrawableGraph()
    graph.add_node(runnables.get(START), START)
    for name, node in builder.nodes.items():
        runnable = runnables.get(name)
        graph.add_node(runnable, name, metadata=_metadata(name, node, runnable, interrupts))
    edges, last_step = _Wiring(builder).dry_run()
    for edge in sorted(edges, key=_edge_order):
        label = edge.label if edge.label != edge.target else None
        _add_edge(graph, edge.source, edge.target, label, edge.conditional)
    termini = {e.target for e in edges if e.target != END} - {e.source for e in edges}
    if termini:
        for name in sorted(termini):
            _add_edge(graph, name, END, None, False)
    elif len(last_step) == 1 and not any(e.target == END for e in edges):
        _add_edge(graph, next(iter(last_step)), END, None, True)
    if xray:
        deeper = xray if isinstance(xray, bool) else max(int(xray) - 1, 0)
        for name, node in builder.nodes.items():
            if hasattr(node.action, "builder") and hasattr(node.action, "get_graph"):
                _inline_subgraph(graph, name, node.action.get_graph(xray=deeper))
    return graph
