"""Assistants: a default one per graph (id = uuid5 of the graph id), plus those clients create."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from plait.server._api import Api
from plait.server._assistant_models import (
    Assistant,
    AssistantCountRequest,
    AssistantCreate,
    AssistantGraphQuery,
    AssistantPatch,
    AssistantSearchRequest,
    AssistantSubgraphsQuery,
    AssistantVersionChange,
    AssistantVersionsSearchRequest,
    xray_depth,
)
from plait.server._auth import authorize
from plait.server._auth_filter import permits
from plait.server._data import assistants
from plait.server._http import json_response, paged_response
from plait.server._records import AssistantDoc
from plait.server._schemas import graph_schemas
from plait.server._state import ServerState, state_of
from plait.server._wire import ApiError, as_dict, check_uuid, now_iso

__all__ = ["api", "assistant_id_for", "ensure_defaults", "routes"]

_NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")

api = Api("Assistants", "An assistant is a graph with its own config, context and metadata, versioned.")


def assistant_id_for(value: str, state: ServerState) -> str:
    """An assistant id, or the default assistant's id when ``value`` names a graph."""
    if value in state.graphs:
        return str(uuid.uuid5(_NAMESPACE_GRAPH, value))
    return check_uuid(value, "assistant ID")


async def ensure_defaults(state: ServerState) -> None:
    """Create the default assistant of every configured graph (once; idempotent across workers)."""
    for graph_id in state.graphs:
        assistant_id = str(uuid.uuid5(_NAMESPACE_GRAPH, graph_id))
        if await assistants.get(state.db, assistant_id) is not None:
            continue
        now = now_iso()
        doc = _doc(assistant_id, graph_id, {}, {}, {"created_by": "system"}, graph_id, None, now)
        try:
            await assistants.write(state.db, doc, insert=True)
        except Exception:  # noqa: BLE001 - another worker created it first
            if await assistants.get(state.db, assistant_id) is None:
                raise


def _doc(  # noqa: PLR0913 - the fields of an assistant
    assistant_id: str,
    graph_id: str,
    config: dict[str, object],
    context: dict[str, object],
    metadata: dict[str, object],
    name: str,
    description: str | None,
    now: str,
) -> AssistantDoc:
    return {
        "assistant_id": assistant_id,
        "graph_id": graph_id,
        "config": config,
        "context": context,
        "metadata": metadata,
        "name": name,
        "created_at": now,
        "updated_at": now,
        "version": 1,
        "description": description,
    }


async def _found(
    request: Request, action: str = "read", value: dict[str, object] | None = None
) -> AssistantDoc:
    """The assistant of the path, once the auth allows ``action`` on it (``value``: the action's, else
    ``{"assistant_id": ...}``); 404 when it does not exist or the auth's filter hides it."""
    state = state_of(request)
    assistant_id = assistant_id_for(request.path_params["assistant_id"], state)
    value = {} if value is None else value
    value["assistant_id"] = assistant_id
    filters = await authorize(request, "assistants", action, value)
    doc = await assistants.get(state.db, assistant_id)
    if doc is None or not permits(filters, doc.get("metadata")):
        raise ApiError(404, f"Assistant {assistant_id} not found")
    return doc


def _config_context(
    data: AssistantPatch | AssistantCreate,
) -> tuple[dict[str, object], dict[str, object] | None]:
    """The body's config and context kept in step like LangGraph's: each mirrors the other.

    ``config.configurable`` and ``context`` together are a 400; either one alone sets both.
    """
    config = dict(data.config or {})
    context = data.context
    if config.get("configurable") and context:
        raise ApiError(400, "Cannot specify both configurable and context. Prefer setting context alone.")
    if config.get("configurable"):
        context = as_dict(config["configurable"])
    elif context:
        config["configurable"] = context
    return config, context


@api.post("/assistants", "Create Assistant", body=AssistantCreate, response=Assistant)
async def create(request: Request, body: AssistantCreate) -> Response:
    """A new assistant of a configured graph (``if_exists``: when its id is taken)."""
    state = state_of(request)
    graph_id = body.graph_id
    if graph_id not in state.graphs:
        raise ApiError(
            404 if graph_id else 422,
            f"graph_id must name a configured graph {sorted(state.graphs)}, got {graph_id!r}",
        )
    config, context = _config_context(body)
    context, metadata = context or {}, body.metadata or {}
    assistant_id = body.assistant_id or str(uuid.uuid4())
    value: dict[str, object] = {
        "assistant_id": assistant_id,
        "graph_id": graph_id,
        "config": config,
        "context": context,
        "metadata": metadata,
        "if_exists": body.if_exists or "raise",
        "name": body.name or "Untitled",
    }
    filters = await authorize(request, "assistants", "create", value)
    metadata = as_dict(value.get("metadata"))
    existing = await assistants.get(state.db, assistant_id)
    if existing is not None and not permits(filters, existing.get("metadata")):  # another user's
        raise ApiError(409, f"Assistant {assistant_id} already exists")
    if existing is not None:
        if body.if_exists == "do_nothing":
            return json_response(existing)
        raise ApiError(409, f"Assistant {assistant_id} already exists")
    name = body.name or "Untitled"
    doc = _doc(assistant_id, graph_id, config, context, metadata, name, body.description, now_iso())
    await assistants.write(state.db, doc, insert=True)
    return json_response(doc)


@api.get("/assistants/{assistant_id}", "Get Assistant", response=Assistant)
async def get(request: Request) -> Response:
    """The assistant (by its id, or a graph's id for the graph's default assistant)."""
    return json_response(await _found(request))


@api.patch("/assistants/{assistant_id}", "Patch Assistant", body=AssistantPatch, response=Assistant)
async def patch(request: Request, body: AssistantPatch) -> Response:
    """A new version of the assistant with the given fields replaced (metadata merged in)."""
    state = state_of(request)
    value: dict[str, object] = {"graph_id": body.graph_id, "config": body.config, "context": body.context}
    value.update(name=body.name, version=None, metadata=dict(body.metadata or {}))
    doc = await _found(request, "update", value)
    # (the metadata as the auth's handler left it)
    metadata = as_dict(value.get("metadata")) or (None if body.metadata is None else body.metadata)
    graph_id = body.graph_id
    if graph_id is not None and graph_id not in state.graphs:
        raise ApiError(404, f"graph_id must name a configured graph {sorted(state.graphs)}, got {graph_id!r}")
    config, context = _config_context(body)
    now = now_iso()

    def change(current: AssistantDoc) -> None:  # (as it is now: another update may have come first)
        if config:
            current["config"] = config
        if context is not None:
            current["context"] = context
        if body.name is not None:
            current["name"] = body.name
        if body.description is not None:
            current["description"] = body.description
        if graph_id is not None:
            current["graph_id"] = graph_id
        if metadata is not None:
            current["metadata"] = {**as_dict(current.get("metadata")), **metadata}
        current["updated_at"] = now

    stored = await assistants.modify(state.db, doc["assistant_id"], change)
    if stored is None:  # deleted meanwhile
        raise ApiError(404, f"Assistant {doc['assistant_id']} not found")
    return json_response(stored)


@api.delete("/assistants/{assistant_id}", "Delete Assistant", status=204)
async def delete(request: Request) -> Response:
    """Delete the assistant, its versions and its crons."""
    state = state_of(request)
    doc = await _found(request, "delete")
    await assistants.delete(state.db, doc["assistant_id"])
    return Response(status_code=204)


async def _query(request: Request, data: AssistantCountRequest) -> assistants.AssistantQuery:
    """The assistants a search or count body selects, once the auth allows the search (its handler
    may change the metadata wanted, and its filter narrows the search)."""
    metadata = data.metadata or {}
    limit, offset = (data.limit, data.offset) if isinstance(data, AssistantSearchRequest) else (10, 0)
    value: dict[str, object] = {
        "graph_id": data.graph_id,
        "metadata": metadata,
        "limit": limit,
        "offset": offset,
    }
    filters = await authorize(request, "assistants", "search", value)
    metadata = as_dict(value.get("metadata"))
    return assistants.AssistantQuery(data.graph_id, data.name, metadata, filters)


@api.post("/assistants/search", "Search Assistants", body=AssistantSearchRequest, response=list[Assistant])
async def search(request: Request, body: AssistantSearchRequest) -> Response:
    """Assistants by graph, name and metadata; sorted and paged (``X-Pagination-Total``)."""
    query = await _query(request, body)
    sort_by, order = body.sort_by or "created_at", body.sort_order or "desc"
    db = state_of(request).db
    page, total = await assistants.search(db, query, sort_by, order, body.limit, body.offset)
    return paged_response(page, total, body.offset, body.limit, body.select)


@api.post("/assistants/count", "Count Assistants", body=AssistantCountRequest, response=int)
async def count(request: Request, body: AssistantCountRequest) -> Response:
    """How many assistants the filters select."""
    return json_response(await assistants.count(state_of(request).db, await _query(request, body)))


_GRAPH = {"type": "object", "description": "The graph's drawing: ``nodes`` and ``edges``."}
_SCHEMAS = {
    "type": "object",
    "description": "The graph's input, output, state, config and context JSON schemas.",
}


@api.get(
    "/assistants/{assistant_id}/graph", "Get Assistant Graph", query=AssistantGraphQuery, response=_GRAPH
)
async def graph(request: Request, query: AssistantGraphQuery) -> Response:
    """The assistant's graph: nodes and edges (``xray``: subgraphs drawn inside, that deep)."""
    doc = await _found(request)
    compiled: Any = state_of(request).graphs[doc["graph_id"]]  # a CompiledStateGraph
    drawable = compiled.get_graph(xray=xray_depth(query.xray))
    nodes = [
        {"id": n}
        if n == "__end__"
        else {"id": n, "type": "runnable", "data": {"name": n}}
        | ({"metadata": node.metadata} if node.metadata else {})  # __tools, __interrupt, defer
        for n, node in drawable.nodes.items()
    ]
    edges = [
        {"source": e.source, "target": e.target, **({"conditional": True} if e.conditional else {})}
        for e in drawable.edges
    ]
    return json_response({"nodes": nodes, "edges": edges})


@api.get("/assistants/{assistant_id}/schemas", "Get Assistant Schemas", response=_SCHEMAS)
async def schemas(request: Request) -> Response:
    """The graph's input, output, state, config and context JSON schemas."""
    doc = await _found(request)
    compiled = state_of(request).graphs[doc["graph_id"]]
    return json_response({"graph_id": doc["graph_id"], **graph_schemas(compiled, doc["graph_id"])})


@api.get(
    "/assistants/{assistant_id}/subgraphs",
    "Get Assistant Subgraphs",
    query=AssistantSubgraphsQuery,
    response=_SCHEMAS,
)
@api.get(
    "/assistants/{assistant_id}/subgraphs/{namespace}",
    "Get Assistant Subgraphs by Namespace",
    query=AssistantSubgraphsQuery,
    response=_SCHEMAS,
)
async def subgraphs(request: Request, query: AssistantSubgraphsQuery) -> Response:
    """Each subgraph's schemas, by namespace (of the path's namespace only; ``recurse``: nested too)."""
    doc = await _found(request)
    compiled: Any = state_of(request).graphs[doc["graph_id"]]
    recurse = query.recurse
    namespace = request.path_params.get("namespace")
    found = {
        ns: graph_schemas(sub, None)
        async for ns, sub in compiled.aget_subgraphs(namespace=namespace, recurse=recurse)
    }
    return json_response(found)


@api.post(
    "/assistants/{assistant_id}/versions",
    "Get Assistant Versions",
    body=AssistantVersionsSearchRequest,
    response=list[Assistant],
)
async def versions(request: Request, body: AssistantVersionsSearchRequest) -> Response:
    """The assistant's stored versions whose metadata holds ``metadata``'s keys and values, newest first."""
    doc = await _found(request)
    stored = await assistants.versions(state_of(request).db, doc["assistant_id"])
    wanted = body.metadata or {}
    found = [
        {k: v for k, v in d.items() if k != "updated_at"}
        for d in stored
        if all(as_dict(d.get("metadata")).get(key) == value for key, value in wanted.items())
    ]
    return json_response(found[body.offset : body.offset + body.limit])


@api.post(
    "/assistants/{assistant_id}/latest",
    "Set Latest Assistant Version",
    body=AssistantVersionChange,
    body_required=True,
    response=Assistant,
)
async def set_latest(request: Request, body: AssistantVersionChange) -> Response:
    """Make a stored version the current one."""
    state = state_of(request)
    version = body.version
    doc = await _found(request, "update", {"version": version})
    chosen = await assistants.version(state.db, doc["assistant_id"], version)
    if chosen is None:
        raise ApiError(404, f"Assistant {doc['assistant_id']} has no version {version}")
    chosen["updated_at"] = now_iso()
    await assistants.write(state.db, chosen, insert=False)
    return json_response(chosen)


routes = api.routes()
