"""The ASGI application: routes, errors as JSON, auth, body limits, CORS, and the worker's lifespan."""

from __future__ import annotations

import hmac
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from plait.server import _assistants, _crons, _runs, _store, _thread_state, _thread_stream, _threads, _ui
from plait.server._config import Settings
from plait.server._http import http_error, json_response, server_error
from plait.server._state import open_state, state_of
from plait.server._wire import ApiError
from plait.server._worker import Worker

__all__ = ["create_app"]

_OPEN_PATHS = ("/ok", "/info", "/ui", "/ui/")


class _Guard:
    """Bearer-token auth and the request body size limit, before any route runs."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int) -> None:
        self.app, self.token, self.max_body = app, token, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.token and scope["method"] != "OPTIONS" and scope["path"] not in _OPEN_PATHS:
            given = headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                alt = headers.get("x-api-key", "")
                if not hmac.compare_digest(alt.encode(), self.token.encode()):
                    await json_response(
                        {"detail": "Missing or invalid bearer token"}, 401, {"WWW-Authenticate": "Bearer"}
                    )(scope, receive, send)
                    return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            await self._too_large(scope, receive, send)
            return
        await self.app(scope, self._limited(receive), send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"Request body larger than {self.max_body} bytes (--max-body)"
        await json_response({"detail": detail}, 413)(scope, receive, send)

    def _limited(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise ApiError(413, f"Request body larger than {self.max_body} bytes (--max-body)")
            return message

        return counted


async def _api_error(request: Request, exc: Exception) -> Response:
    error = exc if isinstance(exc, ApiError) else ApiError(500, str(exc))
    return json_response({"detail": error.detail}, error.status)


async def _ok(request: Request) -> Response:
    return json_response({"ok": True})


async def _info(request: Request) -> Response:
    try:
        plait_version = version("plait")
    except PackageNotFoundError:
        plait_version = "unknown"
    state = state_of(request)
    return json_response(
        {
            "version": plait_version,
            "server": "plait",
            "database": state.db.dialect,
            "graphs": sorted(state.graphs),
            "flags": {"assistants": True, "crons": True, "langsmith": False, "strict_resume": True},
        }
    )


def create_app(settings: Settings) -> Starlette:
    """The server application for ``settings`` (its lifespan opens the database and starts the worker)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None, None]:
        state = await open_state(settings)
        await _assistants.ensure_defaults(state)
        app.state.server = state
        state.worker = Worker(state)
        await state.worker.start()
        try:
            yield
        finally:
            await state.worker.stop(drain=settings.lease_ttl)
            await state.close()

    routes: list[Any] = [
        Route("/ok", _ok, methods=["GET"]),
        Route("/info", _info, methods=["GET"]),
        *_assistants.routes,
        *_threads.routes,
        *_thread_state.routes,
        *_thread_stream.routes,
        *_crons.routes,
        *_runs.routes,
        *_store.routes,
        *_ui.routes,
    ]
    middleware = [Middleware(_Guard, token=settings.auth_token, max_body=settings.max_body)]
    if settings.cors_origins or settings.cors:
        options: dict[str, Any] = {
            "allow_methods": ["*"],
            "allow_headers": ["*"],
            "expose_headers": ["Content-Location", "Location", "X-Pagination-Total", "X-Pagination-Next"],
            **settings.cors,  # the config's http.cors, as LangGraph's server reads it
        }
        options["allow_origins"] = [*options.get("allow_origins", []), *settings.cors_origins]
        middleware.insert(0, Middleware(CORSMiddleware, **options))
    handlers: dict[Any, Any] = {ApiError: _api_error, HTTPException: http_error, Exception: server_error}
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers, lifespan=lifespan)
