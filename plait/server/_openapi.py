"""The OpenAPI 3.1 document of the declared endpoints (``GET /openapi.json``) and its page (``GET /docs``).

Built from the :class:`~plait.server._api.Api` declarations: every operation with its tag,
summary, path and query parameters, request body and responses; the models' JSON schemas
(pydantic's) under ``components.schemas``, referred to by ``$ref``. Built once, on first request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic import BaseModel, TypeAdapter
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from plait.server._api import Api, Endpoint
from plait.server._docs_page import render_page
from plait.server._wire import as_dict, dumps

__all__ = ["ErrorResponse", "docs_api", "document"]

_REF = "#/components/schemas/{model}"
_PATH_PARAMS: dict[str, dict[str, object]] = {
    "thread_id": {"type": "string", "format": "uuid", "description": "The thread's id."},
    "run_id": {"type": "string", "format": "uuid", "description": "The run's id."},
    "cron_id": {"type": "string", "format": "uuid", "description": "The cron's id."},
    "assistant_id": {
        "type": "string",
        "description": "The assistant's id (a UUID), or a graph's id for its default assistant.",
    },
    "checkpoint_id": {"type": "string", "description": "A checkpoint's id."},
    "namespace": {"type": "string", "description": "A subgraph's namespace (``|``-separated path)."},
}
_PARAM = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")


class ErrorResponse(BaseModel):
    """An error: what went wrong and how to fix it."""

    detail: str


def _version() -> str:
    try:
        return version("plait")
    except PackageNotFoundError:
        return "unknown"


def _schemas(endpoints: Sequence[Endpoint]) -> tuple[dict[tuple[int, str], Any], dict[str, object]]:
    """Each endpoint's body/response schema (by ``(index, "body" | "response")``) and the components."""
    inputs: list[tuple[tuple[int, str], Any, TypeAdapter[Any]]] = [
        ((-1, "error"), "validation", TypeAdapter(ErrorResponse))
    ]
    for n, ep in enumerate(endpoints):
        if ep.body is not None:
            inputs.append(((n, "body"), "validation", TypeAdapter(ep.body)))
        if ep.response is not None and not isinstance(ep.response, dict):
            inputs.append(((n, "response"), "validation", TypeAdapter(ep.response)))
    found, defs = TypeAdapter.json_schemas(inputs, ref_template=_REF)
    by_key = {key: schema for (key, _mode), schema in found.items()}
    for n, ep in enumerate(endpoints):
        given: object = ep.response
        if isinstance(given, dict):
            by_key[(n, "response")] = as_dict(given)
    return by_key, dict(defs.get("$defs", {}))


def _query_params(ep: Endpoint, components: dict[str, object]) -> list[dict[str, object]]:
    if ep.query is None:
        return []
    schema = ep.query.model_json_schema(ref_template=_REF)
    components.update(schema.pop("$defs", {}))
    required = set(schema.get("required", ()))
    params: list[dict[str, object]] = []
    for name, prop in schema.get("properties", {}).items():
        prop = dict(prop)
        prop.pop("title", None)
        description = prop.pop("description", None)
        param: dict[str, object] = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if description:
            param["description"] = description
        params.append(param)
    return params


def _path_params(path: str) -> list[dict[str, object]]:
    params: list[dict[str, object]] = []
    for name in _PARAM.findall(path):
        schema = dict(_PATH_PARAMS.get(name, {"type": "string"}))
        description = schema.pop("description", None)
        param: dict[str, object] = {"name": name, "in": "path", "required": True, "schema": schema}
        if description:
            param["description"] = description
        params.append(param)
    return params


def _operation_id(ep: Endpoint) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", "_", _PARAM.sub(r"by_\1", ep.path)).strip("_")
    return f"{ep.method.lower()}_{words or 'root'}"


def _responses(ep: Endpoint, schema: Any, error: Any) -> dict[str, object]:
    if ep.status == 204:
        ok: dict[str, object] = {"description": "Done; no content."}
    elif ep.stream:
        ok = {
            "description": "A stream of server-sent events.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    else:
        ok = {"description": "Success."}
        ok["content"] = {ep.media: {"schema": schema if schema is not None else {}}}
    answers: dict[str, object] = {str(ep.status): ok}
    errors = {"content": {"application/json": {"schema": error}}}
    params = _PARAM.findall(ep.path)
    if params:
        answers["404"] = {"description": "Not found.", **errors}
    if ep.body is not None or ep.query is not None or params:
        answers["422"] = {"description": "A field or parameter is not what it must be.", **errors}
    return answers


def document(apis: Sequence[Api]) -> dict[str, object]:
    """The OpenAPI 3.1 document of ``apis``' endpoints (those described only, too)."""
    endpoints = [ep for api in apis for ep in api.endpoints]
    schemas, components = _schemas(endpoints)
    paths: dict[str, dict[str, object]] = {}
    for n, ep in enumerate(endpoints):
        operation: dict[str, object] = {
            "tags": [ep.tag],
            "summary": ep.summary,
            "operationId": _operation_id(ep),
            "parameters": _path_params(ep.path) + _query_params(ep, components),
            "responses": _responses(ep, schemas.get((n, "response")), schemas[(-1, "error")]),
        }
        if ep.description:
            operation["description"] = ep.description
        if ep.body is not None:
            operation["requestBody"] = {
                "required": ep.body_required,
                "content": {"application/json": {"schema": schemas[(n, "body")]}},
            }
        method = ep.method.lower()
        if method in paths.setdefault(ep.path, {}):
            raise ValueError(f"{ep.method} {ep.path} is declared twice")
        paths[ep.path][method] = operation
    tags: dict[str, str] = {}
    for api in apis:
        if api.endpoints and (api.tag not in tags or api.description):
            tags[api.tag] = api.description or tags.get(api.tag, "")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "plait serve",
            "version": _version(),
            "description": "The Agent Server API of plait serve (the routes langgraph-sdk calls).",
        },
        "tags": [{"name": name, **({"description": d} if d else {})} for name, d in tags.items()],
        "paths": paths,
        "components": {"schemas": dict(sorted(components.items()))},
    }


def docs_api(apis: Sequence[Api], finish: Callable[[dict[str, object]], None] | None = None) -> Api:
    """``GET /openapi.json`` and ``GET /docs`` for ``apis`` (and themselves); ``finish`` completes
    the document (the config's auth adds its security schemes)."""
    api = Api("System")
    built: dict[str, bytes] = {}

    def raw() -> dict[str, bytes]:
        if not built:
            doc = document([*apis, api])
            if finish is not None:
                finish(doc)
            built["json"], built["html"] = dumps(doc), render_page(doc).encode()
        return built

    @api.get("/openapi.json", "OpenAPI Document", response={"type": "object"})
    async def openapi_json(request: Request) -> Response:
        """This document: every route of the API, its parameters, bodies and answers (OpenAPI 3.1)."""
        return Response(raw()["json"], media_type="application/json")

    @api.get("/docs", "API Documentation", response={"type": "string"}, media="text/html")
    async def docs(request: Request) -> Response:
        """The API's documentation as a web page (made from the OpenAPI document, no scripts)."""
        return HTMLResponse(raw()["html"])

    return api
