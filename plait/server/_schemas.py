"""The JSON schemas of a graph (``/assistants/{id}/schemas`` and ``/subgraphs``), shaped as LangGraph's server.

* ``state_schema``: every state key, none required, each defaulting to ``null``, titled
  ``<graph>_state`` for a served graph (LangGraph names the graph after its graph id) or
  ``LangGraphState`` for a subgraph;
* ``config_schema``: the context schema (LangGraph's deprecated ``configurable``), ``{}`` without one;
* ``context_schema``: the context schema or ``null``.
"""

from __future__ import annotations

from typing import Any

from plait.graph._jsonschema import state_jsonschema
from plait.server._wire import as_dict

__all__ = ["graph_schemas"]


def _call(graph: Any, method: str) -> Any:
    try:
        return getattr(graph, method)()
    except Exception:  # noqa: BLE001 - a schema pydantic cannot describe: report none
        return None


def _state_schema(graph: Any, title: str) -> dict[str, object] | None:
    builder = getattr(graph, "builder", None)
    schemas = getattr(builder, "schemas", None)
    state = getattr(builder, "state_schema", None)
    if builder is None or schemas is None or state not in schemas:
        return None
    try:
        found = state_jsonschema(state, schemas[state], title)  # a new dict each call: edited below
    except Exception:  # noqa: BLE001 - a schema pydantic cannot describe: report none
        return None
    found.pop("required", None)
    for spec in as_dict(found.get("properties")).values():
        as_dict(spec).setdefault("default", None)
    found["title"] = title
    return found


def graph_schemas(graph: Any, graph_id: str | None) -> dict[str, object]:
    """The five schemas of ``graph`` (``graph_id``: the served graph's id; ``None`` for a subgraph)."""
    context = _call(graph, "get_context_jsonschema")
    name = getattr(graph, "name", None) or "LangGraph"
    title = f"{graph_id}_state" if graph_id else f"{name}State"
    return {
        "input_schema": _call(graph, "get_input_jsonschema"),
        "output_schema": _call(graph, "get_output_jsonschema"),
        "state_schema": _state_schema(graph, title),
        "config_schema": context or {},
        "context_schema": context,
    }
