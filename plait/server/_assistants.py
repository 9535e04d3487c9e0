"""Assistants: a default one per graph (id = uuid5 of the graph id), plus those clients create."""

from __future__ import annotations

import uuid
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from plait.server._auth import authorize
from plait.server._auth_filter import permits
from plait.server._db import Database, Tx
from plait.server._http import body, json_response, opt, page_response, query_bool
from plait.server._schemas import graph_schemas
from plait.server._state import ServerState, state_of
from plait.server._wire import ApiError, as_dict, check_uuid, dumps, loads, now_iso

__all__ = ["assistant_id_for", "ensure_defaults", "get_assistant", "routes"]

_NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


def assistant_id_for(value: str, state: ServerState) -> str:
    """An assistant id, or the default assistant's id when ``value`` names a graph."""
    if value in state.graphs:
        return str(uuid.uuid5(_NAMESPACE_GRAPH, value))
    return check_uuid(value, "assistant ID")


async def _write(db: Database | Tx, doc: dict[str, Any], *, insert: bool) -> None:
    text = dumps(doc).decode()
    if insert:
        await db.run(
            "INSERT INTO plait_server_assistants (assistant_id, graph_id, name, created_at, updated_at, version, doc) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                doc["assistant_id"],
                doc["graph_id"],
                doc["name"],
                doc["created_at"],
                doc["updated_at"],
                doc["version"],
                text,
            ),
        )
    else:
        await db.run(
            "UPDATE plait_server_assistants SET graph_id = ?, name = ?, updated_at = ?, version = ?, doc = ? "
            "WHERE assistant_id = ?",
            (doc["graph_id"], doc["name"], doc["updated_at"], doc["version"], text, doc["assistant_id"]),
        )
    await db.run(
        "INSERT INTO plait_server_assistant_versions (assistant_id, version, doc) VALUES (?, ?, ?) "
        "ON CONFLICT (assistant_id, version) DO NOTHING",
        (doc["assistant_id"], doc["version"], text),
    )


async def ensure_defaults(state: ServerState) -> None:
    """Create the default assistant of every configured graph (once; idempotent across workers)."""
    for graph_id in state.graphs:
        assistant_id = str(uuid.uuid5(_NAMESPACE_GRAPH, graph_id))
        if await get_assistant(state.db, assistant_id) is not None:
            continue
        now = now_iso()
        doc = _doc(assistant_id, graph_id, {}, {}, {"created_by": "system"}, graph_id, None, now)
        try:
            await _write(state.db, doc, insert=True)
        except Exception:  # noqa: BLE001 - another worker created it first
            if await get_assistant(state.db, assistant_id) is None:
                raise


def _doc(  # noqa: PLR0913 - the fields of an assistant
    assistant_id: str,
    graph_id: str,
    config: dict[str, Any],
    context: dict[str, Any],
    metadata: dict[str, Any],
    name: str,
    description: str | None,
    now: str,
) -> dict[str, Any]:
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


async def get_assistant(db: Database, assistant_id: str) -> dict[str, Any] | None:
    """The assistant's document, or ``None``."""
    rows = await db.fetch("SELECT doc FROM plait_server_assistants WHERE assistant_id = ?", (assistant_id,))
    return cast("dict[str, Any]", loads(rows[0]["doc"])) if rows else None


async def _found(
    request: Request, action: str = "read", value: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The assistant of the path, once the auth allows ``action`` on it (``value``: the action's, else
    ``{"assistant_id": ...}``); 404 when it does not exist or the auth's filter hides it."""
    state = state_of(request)
    assistant_id = assistant_id_for(request.path_params["assistant_id"], state)
    value = {} if value is None else value
    value["assistant_id"] = assistant_id
    filters = await authorize(request, "assistants", action, value)
    doc = await get_assistant(state.db, assistant_id)
    if doc is None or not permits(filters, doc.get("metadata")):
        raise ApiError(404, f"Assistant {assistant_id} not found")
    return doc


def _config_context(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The body's config and context kept in step like LangGraph's: each mirrors the other.

    ``config.configurable`` and ``context`` together are a 400; either one alone sets both.
    """
    config = dict(as_dict(opt(data, "config", dict)))
    context: dict[str, Any] | None = opt(data, "context", dict)
    if config.get("configurable") and context:
        raise ApiError(400, "Cannot specify both configurable and context. Prefer setting context alone.")
    if config.get("configurable"):
        context = as_dict(config["configurable"])
    elif context:
        config["configurable"] = context
    return config, context


def _checked_config(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    config, context = _config_context(data)
    metadata = as_dict(opt(data, "metadata", dict))
    return config, context or {}, metadata


async def create(request: Request) -> Response:
    """``POST /assistants``."""
    state = state_of(request)
    data = await body(request)
    graph_id = opt(data, "graph_id", str)
    if graph_id not in state.graphs:
        raise ApiError(
            404 if graph_id else 422,
            f"graph_id must name a configured graph {sorted(state.graphs)}, got {graph_id!r}",
        )
    config, context, metadata = _checked_config(data)
    assistant_id = check_uuid(opt(data, "assistant_id", str) or str(uuid.uuid4()), "assistant ID")
    value = {
        "assistant_id": assistant_id,
        "graph_id": graph_id,
        "config": config,
        "context": context,
        "metadata": metadata,
        "if_exists": data.get("if_exists") or "raise",
        "name": opt(data, "name", str) or "Untitled",
    }
    filters = await authorize(request, "assistants", "create", value)
    metadata = as_dict(value.get("metadata"))
    existing = await get_assistant(state.db, assistant_id)
    if existing is not None and not permits(filters, existing.get("metadata")):  # another user's
        raise ApiError(409, f"Assistant {assistant_id} already exists")
    if existing is not None:
        if data.get("if_exists") == "do_nothing":
            return json_response(existing)
        raise ApiError(409, f"Assistant {assistant_id} already exists")
    name = opt(data, "name", str) or "Untitled"
    doc = _doc(
        assistant_id, graph_id, config, context, metadata, name, opt(data, "description", str), now_iso()
    )
    await _write(state.db, doc, insert=True)
    return json_response(doc)


async def get(request: Request) -> Response:
    """``GET /assistants/{assistant_id}``."""
    return json_response(await _found(request))


async def patch(request: Request) -> Response:
    """``PATCH /assistants/{assistant_id}``: a new version with the given fields replaced."""
    state = state_of(request)
    data = await body(request)
    value = {k: data.get(k) for k in ("graph_id", "config", "context", "name", "version")}
    value["metadata"] = dict(as_dict(opt(data, "metadata", dict)))
    doc = await _found(request, "update", value)
    if as_dict(value.get("metadata")):  # (as the auth's handler left it)
        data["metadata"] = as_dict(value["metadata"])
    graph_id = opt(data, "graph_id", str)
    if graph_id is not None and graph_id not in state.graphs:
        raise ApiError(404, f"graph_id must name a configured graph {sorted(state.graphs)}, got {graph_id!r}")
    config, context = _config_context(data)
    if config:
        doc["config"] = config
    if context is not None:
        doc["context"] = context
    for key, kind in (
        ("name", str),
        ("description", str),
        ("graph_id", str),
    ):
        if data.get(key) is not None:
            doc[key] = opt(data, key, kind)
    if data.get("metadata") is not None:
        doc["metadata"] = {**doc["metadata"], **opt(data, "metadata", dict)}
    rows = await state.db.fetch(
        "SELECT MAX(version) AS v FROM plait_server_assistant_versions WHERE assistant_id = ?",
        (doc["assistant_id"],),
    )
    doc["version"] = int(rows[0]["v"] or doc["version"]) + 1
    doc["updated_at"] = now_iso()
    await _write(state.db, doc, insert=False)
    return json_response(doc)


async def delete(request: Request) -> Response:
    """``DELETE /assistants/{assistant_id}``: with its versions and its crons."""
    state = state_of(request)
    doc = await _found(request, "delete")
    async with state.db.tx() as tx:
        for table in ("plait_server_assistants", "plait_server_assistant_versions", "plait_server_crons"):
            await tx.run(f"DELETE FROM {table} WHERE assistant_id = ?", (doc["assistant_id"],))
    return Response(status_code=204)


async def _matching(request: Request, data: dict[str, Any]) -> list[dict[str, Any]]:
    state = state_of(request)
    metadata = as_dict(opt(data, "metadata", dict))
    graph_id, name = opt(data, "graph_id", str), opt(data, "name", str)
    value = {"graph_id": graph_id, "metadata": metadata, "limit": data.get("limit") or 10}
    value["offset"] = data.get("offset") or 0
    filters = await authorize(request, "assistants", "search", value)
    metadata = as_dict(value.get("metadata"))
    rows = await state.db.fetch("SELECT doc FROM plait_server_assistants ORDER BY created_at DESC")
    docs = [loads(r["doc"]) for r in rows]
    return [
        d
        for d in docs
        if (graph_id is None or d["graph_id"] == graph_id)
        and (name is None or name.lower() in d["name"].lower())
        and all(d["metadata"].get(k) == v for k, v in metadata.items())
        and permits(filters, d["metadata"])
    ]


async def search(request: Request) -> Response:
    """``POST /assistants/search``."""
    data = await body(request)
    docs = await _matching(request, data)
    sort_by = opt(data, "sort_by", str) or "created_at"
    if sort_by not in ("assistant_id", "graph_id", "name", "created_at", "updated_at"):
        raise ApiError(
            422, f"sort_by must be assistant_id, graph_id, name, created_at or updated_at, got {sort_by!r}"
        )
    docs.sort(key=lambda d: d[sort_by], reverse=(opt(data, "sort_order", str) or "desc") == "desc")
    limit, offset = opt(data, "limit", int) or 10, opt(data, "offset", int) or 0
    return page_response(docs, offset, limit, opt(data, "select", list))


async def count(request: Request) -> Response:
    """``POST /assistants/count``."""
    return json_response(len(await _matching(request, await body(request))))


def _xray(raw: str | None) -> bool | int:
    """The ``xray`` query parameter: true/false or a depth >= 1 (422 otherwise)."""
    if not raw or raw in ("false", "False"):
        return False
    if raw in ("true", "True"):
        return True
    try:
        depth = int(raw)
    except ValueError:
        depth = 0
    if depth <= 0:
        raise ApiError(422, "Invalid xray value")
    return depth


async def graph(request: Request) -> Response:
    """``GET /assistants/{assistant_id}/graph``: nodes and edges."""
    doc = await _found(request)
    compiled: Any = state_of(request).graphs[doc["graph_id"]]  # a CompiledStateGraph
    drawable = compiled.get_graph(xray=_xray(request.query_params.get("xray")))
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


async def schemas(request: Request) -> Response:
    """``GET /assistants/{assistant_id}/schemas``: input, output, state, config and context JSON schemas."""
    doc = await _found(request)
    compiled = state_of(request).graphs[doc["graph_id"]]
    return json_response({"graph_id": doc["graph_id"], **graph_schemas(compiled, doc["graph_id"])})


async def subgraphs(request: Request) -> Response:
    """``GET /assistants/{assistant_id}/subgraphs[/{namespace}]?recurse=``: each subgraph's schemas by path."""
    doc = await _found(request)
    compiled: Any = state_of(request).graphs[doc["graph_id"]]
    recurse = query_bool(request, "recurse")
    namespace = request.path_params.get("namespace")
    found = {
        ns: graph_schemas(sub, None)
        async for ns, sub in compiled.aget_subgraphs(namespace=namespace, recurse=recurse)
    }
    return json_response(found)


async def versions(request: Request) -> Response:
    """``POST /assistants/{assistant_id}/versions``: every stored version, newest first."""
    doc = await _found(request)
    data = await body(request)
    rows = await state_of(request).db.fetch(
        "SELECT doc FROM plait_server_assistant_versions WHERE assistant_id = ? ORDER BY version DESC",
        (doc["assistant_id"],),
    )
    found = [{k: v for k, v in loads(r["doc"]).items() if k != "updated_at"} for r in rows]
    limit, offset = opt(data, "limit", int) or 10, opt(data, "offset", int) or 0
    return json_response(found[offset : offset + limit])


async def set_latest(request: Request) -> Response:
    """``POST /assistants/{assistant_id}/latest``: make a stored version the current one."""
    state = state_of(request)
    version = opt(await body(request, required=True), "version", int)
    doc = await _found(request, "update", {"version": version})
    rows = await state.db.fetch(
        "SELECT doc FROM plait_server_assistant_versions WHERE assistant_id = ? AND version = ?",
        (doc["assistant_id"], version),
    )
    if not rows:
        raise ApiError(404, f"Assistant {doc['assistant_id']} has no version {version}")
    chosen = loads(rows[0]["doc"])
    chosen["updated_at"] = now_iso()
    await _write(state.db, chosen, insert=False)
    return json_response(chosen)


routes = [
    Route("/assistants", create, methods=["POST"]),
    Route("/assistants/search", search, methods=["POST"]),
    Route("/assistants/count", count, methods=["POST"]),
    Route("/assistants/{assistant_id}", get, methods=["GET"]),
    Route("/assistants/{assistant_id}", patch, methods=["PATCH"]),
    Route("/assistants/{assistant_id}", delete, methods=["DELETE"]),
    Route("/assistants/{assistant_id}/graph", graph, methods=["GET"]),
    Route("/assistants/{assistant_id}/schemas", schemas, methods=["GET"]),
    Route("/assistants/{assistant_id}/subgraphs", subgraphs, methods=["GET"]),
    Route("/assistants/{assistant_id}/subgraphs/{namespace}", subgraphs, methods=["GET"]),
    Route("/assistants/{assistant_id}/versions", versions, methods=["POST"]),
    Route("/assistants/{assistant_id}/latest", set_latest, methods=["POST"]),
]
