"""JSON responses, query integers and the one error handler shared by the endpoints (request bodies:
:mod:`plait.server._api`)."""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plait.server._wire import ApiError, dumps

_log = logging.getLogger("plait.server")

__all__ = [
    "RETRY_AFTER",
    "CatchErrors",
    "database_down",
    "error_response",
    "json_response",
    "page_response",
    "paged_response",
    "query_int",
]


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


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response encoded like state values (messages as dicts)."""
    return Response(dumps(data), status_code=status, media_type="application/json", headers=headers)


def page_response(
    found: Sequence[Mapping[str, object]], offset: int, limit: int, select: list[str] | None
) -> Response:
    """One page of search results (``select`` keeps those fields) with LangGraph's pagination
    headers (``X-Pagination-Total``, ``-Next``)."""
    return paged_response(list(found[offset : offset + limit]), len(found), offset, limit, select)


def paged_response(
    page: Sequence[Mapping[str, object]], total: int, offset: int, limit: int, select: Sequence[str] | None
) -> Response:
    """A page of search results the database paged (``total``: how many the search selects in all;
    ``select`` keeps those fields) with LangGraph's pagination headers."""
    if select:
        page = [{k: d.get(k) for k in select} for d in page]
    headers = {"X-Pagination-Total": str(total)}
    if offset + limit < total:
        headers["X-Pagination-Next"] = str(offset + limit)
    return json_response(page, headers=headers)


async def error_response(request: Request, exc: Exception) -> Response:
    """The one error handler of every route (and of :class:`CatchErrors`): JSON ``{"detail": ...}``.

    An :class:`ApiError` or a Starlette ``HTTPException`` keeps its status; a database that cannot
    be reached (PostgreSQL down or restarting, no pooled connection in time, SQLite locked) is a
    503 typed ``"error": "DatabaseUnavailable"`` with ``Retry-After`` (the driver's message only in
    the log); anything else is logged with its traceback and answered as a 500.
    """
    if isinstance(exc, ApiError):
        return json_response({"detail": exc.detail}, exc.status)
    if isinstance(exc, HTTPException):
        return json_response({"detail": exc.detail}, exc.status_code, dict(exc.headers or {}))
    down = database_down(exc)
    if down is not None:
        _log.warning("database unavailable on %s %s: %s", request.method, request.url.path, down)
        detail = "The database is unavailable (restarting or unreachable); try again shortly"
        body = {"error": "DatabaseUnavailable", "detail": detail}
        return json_response(body, 503, {"Retry-After": str(RETRY_AFTER)})
    _log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return json_response({"detail": f"Internal error: {type(exc).__name__}: {exc}"}, 500)


RETRY_AFTER = 2
"""Seconds a client is told to wait (``Retry-After``) when the database is unavailable."""
_PG_OUTAGE = ("08", "53", "57", "58", "40")
"""SQLSTATE classes of a database that cannot serve now: connection, resources, shutdown, system,
a transaction to retry."""
_SQLITE_OUTAGE = ("locked", "busy", "disk i/o", "unable to open")


def database_down(exc: BaseException) -> str | None:
    """What says the database cannot serve now (``"Type: message"``), in ``exc`` or its causes, or ``None``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _outage(current):
            return f"{type(current).__name__}: {current}"
        current = current.__cause__ or current.__context__
    return None


def _outage(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.OperationalError):
        return any(word in str(exc).lower() for word in _SQLITE_OUTAGE)
    psycopg = sys.modules.get("psycopg")  # (imported only where PostgreSQL is used)
    if psycopg is None or not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return False
    state: str | None = getattr(exc, "sqlstate", None)
    return state is None or state[:2] in _PG_OUTAGE


class CatchErrors:
    """Every exception a request raises goes to :func:`error_response` (none reaches the server,
    which would log it a second time); one raised after the response began is logged and dropped."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:  # noqa: BLE001 - answered here, as every route's errors are
            if started:
                _log.error("error after the response began on %s", scope.get("path"), exc_info=exc)
                return
            response = await error_response(Request(scope), exc)
            await response(scope, receive, send)
