"""A drawable view of a graph: Mermaid text and a plain ASCII edge list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.constants import END, START

if TYPE_CHECKING:
    from plait.graph.state import StateGraph

__all__ = ["DrawableGraph", "Edge"]


@dataclass(frozen=True, slots=True)
class Edge:
    """An edge of the drawing; ``conditional`` edges are dotted."""

    source: str
    target: str
    conditional: bool = False
    label: str | None = None


@dataclass(frozen=True, slots=True)
class DrawableGraph:
    """Nodes and edges of a graph, ready to render."""

    nodes: tuple[str, ...]
    edges: tuple[Edge, ...]

    @classmethod
    def from_builder(cls, builder: StateGraph[Any, Any, Any, Any], xray: int | bool = False) -> DrawableGraph:
        """Collect the nodes and edges a builder declares.

        Args:
            builder: The graph's builder.
            xray: Draw subgraph nodes as their own nodes (``"sub:inner"``): ``True`` at every depth,
                a number for that many levels.
        """
        graph = cls._flat(builder)
        depth = -1 if xray is True else int(xray)
        if depth == 0:
            return graph
        for name, node in builder.nodes.items():
            inner = getattr(node.action, "builder", None)
            if inner is not None and name in graph.nodes:
                graph = graph._expand(name, cls.from_builder(inner, True if depth < 0 else depth - 1))
        return graph

    def _expand(self, name: str, inner: DrawableGraph) -> DrawableGraph:
        """Replace node ``name`` by the nodes and edges of ``inner`` (prefixed ``name:``)."""
        into = [e for e in self.edges if e.target == name]
        out = [e for e in self.edges if e.source == name]
        edges = [e for e in self.edges if name not in (e.source, e.target)]
        for e in inner.edges:
            sources = [f"{name}:{e.source}"] if e.source != START else [i.source for i in into]
            targets = [f"{name}:{e.target}"] if e.target != END else [o.target for o in out]
            conditional = e.conditional or (e.source == START and any(i.conditional for i in into))
            edges.extend(Edge(src, dst, conditional, e.label) for src in sources for dst in targets)
        inner_nodes = [f"{name}:{n}" for n in inner.nodes if n not in (START, END)]
        at = self.nodes.index(name)
        return DrawableGraph((*self.nodes[:at], *inner_nodes, *self.nodes[at + 1 :]), tuple(edges))

    @classmethod
    def _flat(cls, builder: StateGraph[Any, Any, Any, Any]) -> DrawableGraph:
        edges = [Edge(s, t) for s, t in sorted(builder.edges)]
        for sources, target in sorted(builder.waiting_edges):
            edges.extend(Edge(s, target) for s in sources)
        for source, branches in builder.branches.items():
            for branch in branches.values():
                targets = branch.ends or tuple(n for n in builder.nodes if n != source) + (END,)
                labels = {v: k for k, v in (branch.path_map or {}).items()}
                for target in targets:
                    label = labels.get(target)
                    edges.append(
                        Edge(
                            source,
                            target,
                            True,
                            None if label == target else (str(label) if label is not None else None),
                        )
                    )
        has_end = any(e.target == END for e in edges) or any(
            not any(e.source == n for e in edges) for n in builder.nodes
        )
        for name in builder.nodes:
            if not any(e.source == name for e in edges):
                edges.append(Edge(name, END))
        nodes = (START, *builder.nodes, *((END,) if has_end else ()))
        return cls(tuple(nodes), tuple(edges))

    def draw_mermaid(self, *, with_styles: bool = True, curve_style: str = "linear") -> str:
        """The graph as a Mermaid flowchart."""
        lines = ["---", "config:", "  flowchart:", f"    curve: {curve_style}", "---", "graph TD;"]
        for node in self.nodes:
            if node == START:
                lines.append(f"\t{START}([<p>{START}</p>]):::first")
            elif node == END:
                lines.append(f"\t{END}([<p>{END}</p>]):::last")
            else:
                lines.append(f"\t{_mid(node)}({node})")
        for edge in self.edges:
            arrow = "-.->" if edge.conditional else "-->"
            label = f"&nbsp;{edge.label}&nbsp;" if edge.label else ""
            if label:
                arrow = f"-. {label} .->" if edge.conditional else f"-- {label} -->"
            lines.append(f"\t{_mid(edge.source)} {arrow} {_mid(edge.target)};")
        if with_styles:
            lines += [
                "\tclassDef default fill:#f2f0ff,line-height:1.2",
                "\tclassDef first fill-opacity:0",
                "\tclassDef last fill:#bfb6fc",
            ]
        return "\n".join(lines) + "\n"

    def draw_ascii(self) -> str:
        """The edges as plain text, one per line."""
        return (
            "\n".join(f"{e.source} {'-.->' if e.conditional else '-->'} {e.target}" for e in self.edges)
            + "\n"
        )

    def to_json(self) -> dict[str, Any]:
        """Nodes and edges as plain data."""
        return {
            "nodes": [{"id": n} for n in self.nodes],
            "edges": [
                {"source": e.source, "target": e.target, "conditional": e.conditional} for e in self.edges
            ],
        }


def _mid(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)
