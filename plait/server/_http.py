"""Request bodies and JSON responses shared by the endpoints."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, cast

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from plait.server._wire import ApiError, dumps, loads

__all__ = [
    "body",
    "http_error",
    "json_response",
    "opt",
    "page_response",
    "query_bool",
    "query_flag",
    "query_int",
    "server_error",
]


async def body(request: Request, *, required: bool = False) -> dict[str, Any]:
    """The request's JSON object (``{}`` when empty); 422 when it is not a JSON object."""
    raw = await request.body()
    if not raw.strip():
        if required:
            raise ApiError(422, "a JSON request body is required")
        return {}
    try:
        data = loads(raw)
    except ValueError:
        raise ApiError(422, "Invalid JSON in request body") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ApiError(422, f"the request body must be a JSON object, got {type(data).__name__}")
    return cast("dict[str, Any]", data)


def opt(data: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str = "") -> Any:
    """``data[key]`` if absent/``None`` or of type ``kind``; 422 otherwise."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, (int, float))):
        raise ApiError(422, f"{key} must be {what or _names(kind)}, got {value!r}")
    return value


def _names(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "a boolean"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def query_int(request: Request, key: str, default: int) -> int:
    """A non-negative integer query parameter."""
    raw = request.query_params.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(422, f"query parameter {key} must be an integer, got {raw!r}") from None
    if value < 0:
        raise ApiError(422, f"query parameter {key} must be >= 0")
    return value


def query_bool(request: Request, key: str) -> bool:
    """A true/false query parameter (``1``, ``true`` or ``True`` is true; anything else false)."""
    return request.query_params.get(key) in ("1", "true", "True")


def query_flag(request: Request, key: str) -> bool | None:
    """A query parameter that must be ``true`` or ``false`` (``1``/``0`` too), ``None`` when absent.

    Raises:
        ApiError: 422, any other value.
    """
    raw = request.query_params.get(key)
    if raw is None:
        return None
    if raw.lower() not in ("true", "false", "1", "0"):
        raise ApiError(422, f"{key} must be true or false, got {raw!r}")
    return raw.lower() in ("true", "1")


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response encoded like state values (messages as dicts)."""
    return Response(dumps(data), status_code=status, media_type="application/json", headers=headers)


def page_response(
    found: Sequence[Any],
    offset: int,
    limit: int,
    select: list[str] | None,
    show: Callable[[Any], dict[str, Any]] | None = None,
) -> Response:
    """One page of search results (each made a document by ``show``, if given; ``select`` keeps
    those fields) with LangGraph's pagination headers (``X-Pagination-Total``, ``-Next``)."""
    page = [show(item) if show is not None else item for item in found[offset : offset + limit]]
    if select:
        page = [{k: d.get(k) for k in select} for d in page]
    headers = {"X-Pagination-Total": str(len(found))}
    if offset + limit < len(found):
        headers["X-Pagination-Next"] = str(offset + limit)
    return json_response(page, headers=headers)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's HTTP errors (404 of an unknown path, 405 …) as JSON ``{"detail": ...}``."""
    if not isinstance(exc, HTTPException):
        return await server_error(request, exc)
    return json_response({"detail": exc.detail}, exc.status_code, dict(exc.headers or {}))


async def server_error(request: Request, exc: Exception) -> Response:
    """An unexpected error: logged with its traceback, answered as a JSON 500."""
    logging.getLogger("plait.server").exception("unexpected error on %s %s", request.method, request.url.path)
    return json_response({"detail": f"Internal error: {type(exc).__name__}: {exc}"}, 500)
