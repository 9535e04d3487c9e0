"""The web inspector at ``/ui``: server-rendered page, small JSON helpers, the graph as SVG.

The page itself (``_ui_page.py``) is plain HTML and vanilla JavaScript; it reads threads,
states and history through the public API and two helpers here: a thread's timeline
(checkpoints with step, nodes and their writes, bytes per channel) and the graph drawing.
"""

from __future__ import annotations

import html
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from plait.server._assistants import assistant_id_for
from plait.server._auth import authorize
from plait.server._auth_filter import permits
from plait.server._data import assistants
from plait.server._http import json_response, query_int
from plait.server._snapshot import state_json
from plait.server._state import state_of
from plait.server._threads import found_thread, thread_graph_id
from plait.server._ui_page import PAGE
from plait.server._wire import ApiError, as_dict, as_list, dumps

__all__ = ["routes", "svg_of"]


async def page(request: Request) -> Response:
    """``GET /ui``: the inspector page."""
    graphs = " ".join(
        f'<option value="{html.escape(g)}">{html.escape(g)}</option>'
        for g in sorted(state_of(request).graphs)
    )
    return HTMLResponse(PAGE.replace("{{GRAPHS}}", graphs))


def _sizes(values: Any) -> dict[str, int]:
    if not isinstance(values, dict):
        return {}
    return {str(k): len(dumps(v)) for k, v in as_dict(values).items()}


async def timeline(request: Request) -> Response:
    """``GET /ui/api/threads/{thread_id}/timeline``: checkpoints, newest first, with writes and sizes."""
    state = state_of(request)
    doc = await found_thread(request)
    if not as_dict(doc.get("metadata")).get("graph_id") and len(state.graphs) != 1:
        return json_response([])
    graph: Any = state.graph(thread_graph_id(state, doc))
    limit = query_int(request, "limit", 100)
    items = [
        state_json(snap)
        async for snap in graph.aget_state_history(
            {"configurable": {"thread_id": doc["thread_id"]}}, limit=limit
        )
    ]
    by_id = {item["checkpoint_id"]: item for item in items}
    return json_response([_entry(item, by_id.get(item["parent_checkpoint_id"])) for item in items])


def _delta(old: Any, new: Any) -> dict[str, object]:
    """What a step wrote: changed keys, with only the appended items of a grown list."""
    before, after = as_dict(old), as_dict(new)
    out: dict[str, object] = {}
    for key, value in after.items():
        prior = before.get(key)
        if prior == value:
            continue
        if (
            isinstance(value, list)
            and isinstance(prior, list)
            and as_list(value)[: len(as_list(prior))] == prior
        ):
            out[key] = as_list(value)[len(as_list(prior)) :]
        else:
            out[key] = value
    return out


def _entry(item: dict[str, object], parent: dict[str, object] | None) -> dict[str, object]:
    """One row of the timeline: the checkpoint, the node(s) that produced it and what they wrote."""
    metadata = as_dict(item["metadata"])
    source = metadata.get("source")
    if parent is not None and source == "loop":
        nodes = list(as_list(parent["next"]))
    elif source == "update":
        nodes = [str(metadata.get("as_node") or "update_state")]
    else:
        nodes = ["input"]
    return {
        "checkpoint_id": item["checkpoint_id"],
        "parent_checkpoint_id": item["parent_checkpoint_id"],
        "step": metadata.get("step"),
        "source": source,
        "run_id": metadata.get("run_id"),
        "created_at": item["created_at"],
        "next": item["next"],
        "nodes": nodes,
        "writes": _delta(parent["values"] if parent else {}, item["values"]),
        "interrupts": item["interrupts"],
        "bytes": _sizes(item["values"]),
    }


_STEP_X, _STEP_Y, _PAD = 170, 90, 60  # column width, row height, room at the sides for curved edges


def _layers(nodes: list[str], edges: list[tuple[str, str, bool]]) -> dict[str, int]:
    """Row of each node: its distance from the first node; unreached nodes, then ``__end__``, at the bottom."""
    depth = {nodes[0]: 0} if nodes else {}
    frontier = list(depth)
    while frontier:
        nxt: list[str] = []
        for source in frontier:
            for s, t, _ in edges:
                if s == source and t not in depth:
                    depth[t] = depth[source] + 1
                    nxt.append(t)
        frontier = nxt
    bottom = max(depth.values(), default=0) + 1
    for node in nodes:
        depth.setdefault(node, bottom)
    into_end = [depth[s] for s, t, _ in edges if t == "__end__" and s != "__end__"]
    if into_end:  # one row below its lowest source: every edge into it goes down
        depth["__end__"] = max(into_end) + 1
    return depth


def _positions(nodes: list[str], depth: dict[str, int]) -> tuple[dict[str, tuple[int, int]], int]:
    """Centre of each node (rows centred, one column width apart) and the drawing's width."""
    rows: dict[int, list[str]] = {}
    for node in nodes:
        rows.setdefault(depth[node], []).append(node)
    width = max((len(r) for r in rows.values()), default=1) * _STEP_X + 2 * _PAD
    pos: dict[str, tuple[int, int]] = {}
    for level, members in rows.items():
        left = (width - len(members) * _STEP_X) // 2
        for i, node in enumerate(members):
            pos[node] = (left + i * _STEP_X + _STEP_X // 2, 40 + level * _STEP_Y)
    return pos, width


def _curve(ends: tuple[str, str], pos: dict[str, tuple[int, int]], depth: dict[str, int]) -> str:
    """The path of an edge that is not one row down: around the rows it spans (on the right going
    down, on the left going back up), over the row within a row, a loop on the right to itself."""
    source, target = ends
    (x1, y1), (x2, y2) = pos[source], pos[target]
    if source == target:
        return f"M{x1 + 70},{y1 - 8} C{x1 + 115},{y1 - 40} {x1 + 115},{y1 + 40} {x1 + 70},{y1 + 8}"
    if depth[source] == depth[target]:
        return f"M{x1},{y1 - 16} C{x1},{y1 - 55} {x2},{y2 - 55} {x2},{y2 - 16}"
    low, high = sorted((depth[source], depth[target]))
    spanned = [x for n, (x, _) in pos.items() if low <= depth[n] <= high]
    if depth[target] > depth[source]:
        side, x1, x2 = max(spanned) + 110, x1 + 70, x2 + 70
    else:
        side, x1, x2 = min(spanned) - 110, x1 - 70, x2 - 70
    return f"M{x1},{y1} C{side},{y1} {side},{y2} {x2},{y2}"


def _edge(ends: tuple[str, str], pos: dict[str, tuple[int, int]], depth: dict[str, int], dash: str) -> str:
    """One edge: straight down to the next row, any other edge curved (:func:`_curve`) so that it
    crosses no node and never lies on top of another edge."""
    source, target = ends
    (x1, y1), (x2, y2) = pos[source], pos[target]
    if depth[target] == depth[source] + 1:
        d = f"M{x1},{y1 + 16} L{x2},{y2 - 16}"
    else:
        d = _curve(ends, pos, depth)
    label = html.escape(f"{source}->{target}")
    return (
        f'<path class="edge" data-edge="{label}" d="{d}" fill="none" stroke="#555"{dash} '
        'marker-end="url(#arrow)"/>'
    )


def svg_of(nodes: list[str], edges: list[tuple[str, str, bool]]) -> str:
    """A layered drawing of the graph: one row per distance from ``__start__``; dashed conditional edges."""
    depth = _layers(nodes, edges)
    pos, width = _positions(nodes, depth)
    height = (max(depth.values(), default=0) + 1) * _STEP_Y + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    for source, target, conditional in edges:
        dash = ' stroke-dasharray="5,4"' if conditional else ""
        parts.append(_edge((source, target), pos, depth, dash))
    for node, (x, y) in pos.items():
        fill = "#bfb6fc" if node == "__end__" else "#fff" if node == "__start__" else "#f2f0ff"
        label = html.escape(node)
        parts.append(
            f'<g class="node" data-node="{label}"><rect x="{x - 70}" y="{y - 16}" width="140" height="32" rx="14" '
            f'fill="{fill}" stroke="#6b5fd3"/><text x="{x}" y="{y + 5}" text-anchor="middle" '
            f'font-family="sans-serif" font-size="13">{label}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


async def drawing(request: Request) -> Response:
    """``GET /ui/api/graphs/{graph_id}``: the graph as Mermaid text and as SVG."""
    graph_id = request.path_params["graph_id"]
    state = state_of(request)
    compiled: Any = state.graphs.get(graph_id)
    if compiled is None:
        raise ApiError(404, f"Graph {graph_id!r} not found")
    # read as its default assistant, which custom auth may refuse (403) or hide (404)
    assistant_id = assistant_id_for(graph_id, state)
    filters = await authorize(request, "assistants", "read", {"assistant_id": assistant_id})
    if filters is not None:
        doc = await assistants.get(state.db, assistant_id)
        if doc is None or not permits(filters, doc.get("metadata")):
            raise ApiError(404, f"Graph {graph_id!r} not found")
    drawn: Any = compiled.get_graph()  # a CompiledStateGraph
    edges = [(e.source, e.target, bool(e.conditional)) for e in drawn.edges]
    nodes = [str(n) for n in drawn.nodes]
    return json_response({"mermaid": drawn.draw_mermaid(), "svg": svg_of(nodes, edges)})


routes = [
    Route("/ui", page, methods=["GET"]),
    Route("/ui/", page, methods=["GET"]),
    Route("/ui/api/threads/{thread_id}/timeline", timeline, methods=["GET"]),
    Route("/ui/api/graphs/{graph_id}", drawing, methods=["GET"]),
]
