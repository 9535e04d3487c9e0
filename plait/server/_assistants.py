"""Assistants: a default one per graph (id = uuid5 of the graph id), plus those clients create."""

from __future__ import annotations

import uuid
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from plait.server._db import Database, Tx
from plait.server._http import body, json_response, opt
from plait.server._state import ServerState
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


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


async def _found(request: Request) -> dict[str, Any]:
    state = _state(request)
    assistant_id = assistant_id_for(request.path_params["assistant_id"], state)
    doc = await get_assistant(state.db, assistant_id)
    if doc is None:
        raise ApiError(404, f"Assistant {assistant_id} not found")
    return doc


def _checked_config(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    config = as_dict(opt(data, "config", dict))
    context = as_dict(opt(data, "context", dict))
    metadata = as_dict(opt(data, "metadata", dict))
    return config, context, metadata


async def create(request: Request) -> Response:
    """``POST /assistants``."""
    state = _state(request)
    data = await body(request)
    graph_id = opt(data, "graph_id", str)
    if graph_id not in state.graphs:
        raise ApiError(
            404 if graph_id else 422,
            f"graph_id must name a configured graph {sorted(state.graphs)}, got {graph_id!r}",
        )
    config, context, metadata = _checked_config(data)
    assistant_id = check_uuid(opt(data, "assistant_id", str) or str(uuid.uuid4()), "assistant ID")
    existing = await get_assistant(state.db, assistant_id)
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
    state = _state(request)
    doc = await _found(request)
    data = await body(request)
    graph_id = opt(data, "graph_id", str)
    if graph_id is not None and graph_id not in state.graphs:
        raise ApiError(404, f"graph_id must name a configured graph {sorted(state.graphs)}, got {graph_id!r}")
    for key, kind in (
        ("config", dict),
        ("context", dict),
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
    """``DELETE /assistants/{assistant_id}``."""
    state = _state(request)
    doc = await _found(request)
    await state.db.run("DELETE FROM plait_server_assistants WHERE assistant_id = ?", (doc["assistant_id"],))
    await state.db.run(
        "DELETE FROM plait_server_assistant_versions WHERE assistant_id = ?", (doc["assistant_id"],)
    )
    return Response(status_code=204)


async def _matching(request: Request, data: dict[str, Any]) -> list[dict[str, Any]]:
    state = _state(request)
    metadata = as_dict(opt(data, "metadata", dict))
    graph_id, name = opt(data, "graph_id", str), opt(data, "name", str)
    rows = await state.db.fetch("SELECT doc FROM plait_server_assistants ORDER BY created_at DESC")
    docs = [loads(r["doc"]) for r in rows]
    return [
        d
        for d in docs
        if (graph_id is None or d["graph_id"] == graph_id)
        and (name is None or name.lower() in d["name"].lower())
        and all(d["metadata"].get(k) == v for k, v in metadata.items())
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
    page = docs[offset : offset + limit]
    select = opt(data, "select", list)
    if select:
        page = [{k: d.get(k) for k in select} for d in page]
    headers = {"X-Pagination-Total": str(len(docs))}
    if offset + limit < len(docs):
        headers["X-Pagination-Next"] = str(offset + limit)
    return json_response(page, headers=headers)


async def count(request: Request) -> Response:
    """``POST /assistants/count``."""
    return json_response(len(await _matching(request, await body(request))))


async def graph(request: Request) -> Response:
    """``GET /assistants/{assistant_id}/graph``: nodes and edges."""
    doc = await _found(request)
    compiled: Any = _state(request).graphs[doc["graph_id"]]  # a CompiledStateGraph
    drawable = compiled.get_graph()
    nodes = [{"id": n, "type": "runnable", "data": {"name": n}} for n in drawable.nodes]
    if nodes and nodes[-1]["id"] == "__end__":
        nodes[-1] = {"id": "__end__"}
    edges = [
        {"source": e.source, "target": e.target, **({"conditional": True} if e.conditional else {})}
        for e in drawable.edges
    ]
    return json_response({"nodes": nodes, "edges": edges})


def _schema(graph: Any, method: str) -> Any:
    try:
        return getattr(graph, method)()
    except Exception:  # noqa: BLE001 - a schema pydantic cannot describe: report none
        return None


async def schemas(request: Request) -> Response:
    """``GET /assistants/{assistant_id}/schemas``: input, output, state and context JSON schemas."""
    doc = await _found(request)
    compiled = _state(request).graphs[doc["graph_id"]]
    builder = getattr(compiled, "builder", None)
    context_schema = getattr(builder, "context_schema", None)
    out = {
        "graph_id": doc["graph_id"],
        "input_schema": _schema(compiled, "get_input_jsonschema"),
        "output_schema": _schema(compiled, "get_output_jsonschema"),
        "state_schema": _schema(compiled, "get_input_jsonschema"),
        "config_schema": None,
        "context_schema": _pydantic_schema(context_schema),
    }
    return json_response(out)


def _pydantic_schema(schema: Any) -> Any:
    if schema is None:
        return None
    try:
        from pydantic import TypeAdapter
    except ImportError:  # pragma: no cover - pydantic is optional
        return None
    try:
        return TypeAdapter(schema).json_schema()
    except Exception:  # noqa: BLE001 - not describable
        return None


async def subgraphs(request: Request) -> Response:
    """``GET /assistants/{assistant_id}/subgraphs``: plait does not list subgraphs yet (empty)."""
    await _found(request)
    return json_response({})


async def versions(request: Request) -> Response:
    """``POST /assistants/{assistant_id}/versions``: every stored version, newest first."""
    doc = await _found(request)
    data = await body(request)
    rows = await _state(request).db.fetch(
        "SELECT doc FROM plait_server_assistant_versions WHERE assistant_id = ? ORDER BY version DESC",
        (doc["assistant_id"],),
    )
    found = [loads(r["doc"]) for r in rows]
    limit, offset = opt(data, "limit", int) or 10, opt(data, "offset", int) or 0
    return json_response(found[offset : offset + limit])


async def set_latest(request: Request) -> Response:
    """``POST /assistants/{assistant_id}/latest``: make a stored version the current one."""
    state = _state(request)
    doc = await _found(request)
    version = opt(await body(request, required=True), "version", int)
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
